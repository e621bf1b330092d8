"""Bad input: every loader either reads a corpus whole or raises one InputError line.

Targeted cases check that the message names the file, the place and what was expected; the
hypothesis tests feed garbage (random bytes, truncations, flipped bytes, wrong columns, random
spreadsheet cells) to every file of every corpus through small temporary copies of the fixtures.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogwm import corpora
from cogwm.errors import InputError
from cogwm.schema import Dialogue

FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: Every raw file each loader reads, relative to the corpus folder.
FILES: dict[str, tuple[str, ...]] = {
    "esconv": ("hf_splits/train.json", "hf_splits/valid.json", "hf_splits/test.json"),
    "persuasionforgood": (
        "FullData/full_dialog.csv",
        "FullData/full_info.csv",
        "AnnotatedData/300_dialog.xlsx",
        "AnnotatedData/300_info.xlsx",
    ),
    "dailydialog": (
        "convlab3_unified/data/dialogues.json",
        "ijcnlp_dailydialog/train/dialogues_emotion_train.txt",
        "ijcnlp_dailydialog/test/dialogues_act_test.txt",
    ),
    "annomi": ("AnnoMI-simple.csv",),
    "inspired": (
        "dialog_data/dev.tsv",
        "dialog_data/test.tsv",
        "survey_data/list_of_dialog_ids_with_movie_id_all.tsv",
        "survey_data/rec_demographic.tsv",
        "survey_data/seeker_demographic.tsv",
        "survey_data/seeker_partner_perception.tsv",
        "survey_data/seeker_personality.tsv",
        "survey_data/rec_personality.tsv",
    ),
}
CORPUS_FILES = [(name, file) for name, files in FILES.items() for file in files]


def _copy(root: Path, name: str) -> Path:
    target = root / name
    shutil.copytree(FIXTURES / name, target)
    return target


def _error(root: Path, name: str) -> str:
    with pytest.raises(InputError) as caught:
        corpora.load(name, root)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"fixture changed: {old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_missing_data_directory(tmp_path: Path) -> None:
    message = _error(tmp_path / "nowhere", "esconv")
    assert "nowhere" in message and "directory not found" in message


def test_missing_corpus_folder(tmp_path: Path) -> None:
    message = _error(tmp_path, "annomi")
    assert str(tmp_path / "annomi") in message


@pytest.mark.parametrize(("name", "file"), CORPUS_FILES)
def test_missing_file(tmp_path: Path, name: str, file: str) -> None:
    (_copy(tmp_path, name) / file).unlink()
    message = _error(tmp_path, name)
    assert file.rsplit("/", 1)[-1] in message and "not found" in message


@pytest.mark.parametrize(
    ("name", "file", "old", "new", "expected"),
    [
        ("esconv", "hf_splits/valid.json", '"speaker": "usr"', '"speaker": "bot"', "line 1"),
        (
            "esconv",
            "hf_splits/train.json",
            '"initial_emotion_intensity": "4"',
            '"initial_emotion_intensity": "high"',
            "an integer",
        ),
        (
            "persuasionforgood",
            "FullData/full_dialog.csv",
            "4,Thank you so much. Have a nice day.,2",
            "4,Thank you so much. Have a nice day.,two",
            "line 6",
        ),
        (
            "persuasionforgood",
            "FullData/full_info.csv",
            "user_11,1,0.5",
            "user_11,1,lots",
            "a number in 'B6'",
        ),
        (
            "persuasionforgood",
            "FullData/full_info.csv",
            "2.6,3.8,4.2,1.4,3.0",
            "2.6,3.8,4.2,1.4,7.0",
            "a Big Five score within [1.0, 5.0] in 'open.x'",
        ),
        ("annomi", "AnnoMI-simple.csv", "n/a,sustain\n7", "n/a,maybe\n7", "'client_talk_type'"),
        (
            "annomi",
            "AnnoMI-simple.csv",
            "example7,reducing alcohol consumption,2",
            "example7,more exercise,2",
            "as on the transcript's first row",
        ),
        ("inspired", "dialog_data/test.tsv", "\tghi789\n", "\tghi789\textra\n", "19 fields"),
        ("inspired", "dialog_data/test.tsv", "RECOMMENDER\t1\tWatch", "BOT\t1\tWatch", "line 4"),
        (
            "dailydialog",
            "convlab3_unified/data/dialogues.json",
            '"emotion": "fear"',
            '"emotion": "joy"',
            "dialogue 3, turns[0]",
        ),
    ],
)
def test_malformed_row_is_named(
    tmp_path: Path, name: str, file: str, old: str, new: str, expected: str
) -> None:
    _edit(_copy(tmp_path, name) / file, old, new)
    message = _error(tmp_path, name)
    assert file.rsplit("/", 1)[-1] in message and expected in message


def test_inspired_rows_that_disagree_on_the_outcome(tmp_path: Path) -> None:
    _edit(
        _copy(tmp_path, "inspired") / "dialog_data/test.tsv",
        "encouragement\t\taccept_rating_good",
        "encouragement\t\taccept_rating_mod",
    )
    assert "the same 'fine_label' on every row" in _error(tmp_path, "inspired")


def test_inspired_survey_outcome_must_agree(tmp_path: Path) -> None:
    _edit(
        _copy(tmp_path, "inspired") / "survey_data/seeker_demographic.tsv",
        "user_5\taccept_rating_good",
        "user_5\treject",
    )
    message = _error(tmp_path, "inspired")
    assert "seeker_demographic.tsv" in message and "case 'accept_rating_good'" in message


def test_dailydialog_labels_must_match_the_original_files(tmp_path: Path) -> None:
    _edit(
        _copy(tmp_path, "dailydialog") / "ijcnlp_dailydialog/train/dialogues_emotion_train.txt",
        "1 5",
        "1 6",
    )
    message = _error(tmp_path, "dailydialog")
    assert "dailydialog:train:1" in message and "line 2 of ijcnlp_dailydialog/train/" in message


def test_p4g_dialogue_without_participants(tmp_path: Path) -> None:
    info = _copy(tmp_path, "persuasionforgood") / "FullData/full_info.csv"
    info.write_text("\n".join(info.read_text().splitlines()[:4]) + "\n")  # drop B's persuadee
    message = _error(tmp_path, "persuasionforgood")
    assert "full_dialog.csv: line 7" in message and "a persuadee row" in message


def test_p4g_labels_for_an_utterance_that_does_not_exist(tmp_path: Path) -> None:
    import openpyxl

    path = _copy(tmp_path, "persuasionforgood") / "AnnotatedData/300_dialog.xlsx"
    workbook = openpyxl.load_workbook(path)
    workbook.worksheets[0].cell(row=7, column=4, value=9)  # sentence "Thank you so much." -> turn 9
    workbook.save(path)
    message = _error(tmp_path, "persuasionforgood")
    assert "300_dialog.xlsx: row 7" in message and "turn 9" in message


@pytest.mark.parametrize(("name", "file"), CORPUS_FILES)
def test_truncated_file(tmp_path: Path, name: str, file: str) -> None:
    path = _copy(tmp_path, name) / file
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _assert_whole_or_error(tmp_path, name)


def _assert_whole_or_error(root: Path, name: str) -> None:
    """The property every loader keeps: a list of dialogues, or one InputError line."""
    try:
        dialogues = corpora.load(name, root)
    except InputError as exc:
        message = str(exc)
        assert "\n" not in message, message
        assert str(root) in message, message
    else:
        assert all(isinstance(d, Dialogue) and d.utterances for d in dialogues)


_GARBAGE = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
_corpus_file = st.sampled_from(CORPUS_FILES)


def _garbage_run(name: str, file: str, mutate: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = _copy(root, name) / file
        path.write_bytes(mutate(path.read_bytes()))  # type: ignore[operator]
        _assert_whole_or_error(root, name)


@_GARBAGE
@given(_corpus_file, st.binary(max_size=3000))
def test_random_bytes(corpus_file: tuple[str, str], data: bytes) -> None:
    _garbage_run(*corpus_file, lambda _: data)


@_GARBAGE
@given(_corpus_file, st.floats(min_value=0.0, max_value=1.0))
def test_random_truncation(corpus_file: tuple[str, str], fraction: float) -> None:
    _garbage_run(*corpus_file, lambda b: b[: int(len(b) * fraction)])


@_GARBAGE
@given(_corpus_file, st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), max_size=8))
def test_flipped_bytes(corpus_file: tuple[str, str], flips: list[tuple[float, int]]) -> None:
    def flip(data: bytes) -> bytes:
        buffer = bytearray(data)
        for where, value in flips:
            if buffer:
                buffer[min(int(where * len(buffer)), len(buffer) - 1)] = value
        return bytes(buffer)

    _garbage_run(*corpus_file, flip)


_text_files = st.sampled_from([cf for cf in CORPUS_FILES if not cf[1].endswith(".xlsx")])
_cell = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@_GARBAGE
@given(_text_files, st.lists(_cell, min_size=1, max_size=6), st.sampled_from([",", "\t", " "]))
def test_wrong_header_or_columns(
    corpus_file: tuple[str, str], cells: list[str], separator: str
) -> None:
    def replace_first_line(data: bytes) -> bytes:
        _, _, rest = data.partition(b"\n")
        return separator.join(cells).encode() + b"\n" + rest

    _garbage_run(*corpus_file, replace_first_line)


_xlsx_cell = st.one_of(
    st.none(),
    st.integers(-5, 20),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet="abcxyz-_ 0123456789.", max_size=10),
    st.sampled_from(["20180101-000000_1_live", "greeting", "user_11", "B2", "Turn"]),
)


@_GARBAGE
@given(
    st.sampled_from(["AnnotatedData/300_dialog.xlsx", "AnnotatedData/300_info.xlsx"]),
    st.lists(st.lists(_xlsx_cell, max_size=13), max_size=8),
    st.booleans(),
)
def test_random_spreadsheet_cells(file: str, rows: list[list[object]], keep_header: bool) -> None:
    import openpyxl

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = _copy(root, "persuasionforgood") / file
        header = next(
            openpyxl.load_workbook(path, read_only=True).worksheets[0].iter_rows(values_only=True)
        )
        workbook = openpyxl.Workbook()
        sheet = workbook.worksheets[0]
        if keep_header:
            sheet.append(list(header))
        for row in rows:
            sheet.append(row)
        workbook.save(path)
        _assert_whole_or_error(root, "persuasionforgood")
