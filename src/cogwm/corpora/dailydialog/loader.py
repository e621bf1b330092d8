"""DailyDialog (Li et al., IJCNLP 2017): everyday conversations with emotion and act per utterance.

The text of all 13,118 dialogues is read from the ConvLab-3 unified file
``convlab3_unified/data/dialogues.json`` (the original ``dialogues_text.txt`` is not
distributed with this copy). Its speakers alternate ``user``/``system``; ``user`` is the
user role. When ``ijcnlp_dailydialog/`` (the original release's label files) lies beside it,
every dialogue's emotion and act sequence is checked against the original split files, so a
transcription slip in the unified file cannot pass unnoticed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cogwm.corpora.common import distribution, task_of
from cogwm.corpora.readers import Row, input_error, read_json, read_text, require_file
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import DailyDialogMeta, DailyDialogUtteranceLabels

NAME = "dailydialog"
UNIFIED_FILE = Path("convlab3_unified", "data", "dialogues.json")
ORIGINAL_DIR = Path("ijcnlp_dailydialog")
SPLITS: tuple[str, ...] = ("train", "validation", "test")
SPEAKER_ROLES: dict[str, Role] = {"user": Role.USER, "system": Role.AGENT}

#: The original release's label codes (its readme.txt).
EMOTIONS: tuple[str, ...] = (
    "no emotion",
    "anger",
    "disgust",
    "fear",
    "happiness",
    "sadness",
    "surprise",
)
ACTS: dict[int, str] = {1: "inform", 2: "question", 3: "directive", 4: "commissive"}

_DIALOGUE_FIELDS = ("dataset", "data_split", "dialogue_id", "original_id", "domains", "turns")
_TURN_FIELDS = ("speaker", "utterance", "utt_idx", "dialogue_acts", "emotion")


def load(corpus_dir: Path) -> list[Dialogue]:
    """All dialogues of the unified file, in its order (train, validation, test).

    Args:
        corpus_dir: The ``dailydialog`` folder.

    Raises:
        InputError: A missing file, a malformed record, or labels that disagree with the
            original release's split files when those are present.
    """
    path = require_file(corpus_dir / UNIFIED_FILE)
    records = read_json(path)
    if not isinstance(records, list):
        raise input_error(path, None, "a JSON array of dialogues", type(records).__name__)
    dialogues = [_dialogue(path, i, record) for i, record in enumerate(records)]
    original = corpus_dir / ORIGINAL_DIR
    if original.is_dir():
        check_against_original(dialogues, original, path)
    return dialogues


def _dialogue(path: Path, position: int, record: object) -> Dialogue:
    if not isinstance(record, dict):
        raise input_error(path, f"dialogue {position}", "a JSON object", type(record).__name__)
    row = Row(path, f"dialogue {position}", record)
    row.check_keys(_DIALOGUE_FIELDS)
    split = row.choice("data_split", SPLITS)
    original_id = row.text("original_id")
    prefix, _, line = original_id.partition("-")
    if prefix != split or not line.isdigit():
        raise row.error(f"'original_id' like '{split}-<line index>'", original_id)
    domains = row.sequence("domains")
    if len(domains) != 1 or not isinstance(domains[0], str):
        raise row.error("one topic in 'domains'", domains)
    turns = row.sequence("turns")
    utterances = [_utterance(row, i, turn) for i, turn in enumerate(turns)]
    return Dialogue(
        id=f"{NAME}:{split}:{line}",
        corpus=NAME,
        split=split,
        task=task_of(NAME),
        utterances=utterances,
        meta=DailyDialogMeta(topic=domains[0], original_id=original_id),
    )


def _utterance(dialogue: Row, index: int, turn: object) -> Utterance:
    if not isinstance(turn, dict):
        raise dialogue.error(f"an object at turns[{index}]", turn)
    row = Row(dialogue.path, f"{dialogue.where}, turns[{index}]", turn)
    row.check_keys(_TURN_FIELDS)
    if row.integer("utt_idx") != index:
        raise row.error(f"'utt_idx' = {index}", row.raw("utt_idx"))
    speaker = row.choice("speaker", SPEAKER_ROLES)
    return Utterance(
        index=index,
        speaker=speaker,
        role=SPEAKER_ROLES[speaker],
        text=row.text("utterance"),
        labels=DailyDialogUtteranceLabels(
            emotion=row.choice("emotion", EMOTIONS), act=_act(row.sub("dialogue_acts", "acts"))
        ),
    )


def _act(row: Row) -> str:
    row.check_keys(("binary", "categorical", "non-categorical"))
    acts = row.sequence("binary")
    if len(acts) != 1 or not isinstance(acts[0], dict):
        raise row.error("exactly one binary dialogue act", acts)
    act = Row(row.path, row.where, acts[0])
    return act.choice("intent", tuple(ACTS.values()))


def check_against_original(dialogues: Sequence[Dialogue], original_dir: Path, path: Path) -> None:
    """Check every dialogue's emotions and acts against the original split label files.

    Args:
        dialogues: Dialogues read from the unified file.
        original_dir: The ``ijcnlp_dailydialog`` folder.
        path: The unified file, named in errors.

    Raises:
        InputError: A split's dialogue count or a dialogue's label sequence differs.
    """
    for split in SPLITS:
        in_split = [d for d in dialogues if d.split == split]
        emotions = _label_lines(original_dir / split / f"dialogues_emotion_{split}.txt")
        acts = _label_lines(original_dir / split / f"dialogues_act_{split}.txt")
        if not len(in_split) == len(emotions) == len(acts):
            raise input_error(
                path,
                f"split {split}",
                f"as many dialogues as the original files ({len(emotions)} emotion lines, "
                f"{len(acts)} act lines)",
                len(in_split),
            )
        for dialogue in in_split:
            line = int(dialogue.id.rsplit(":", 1)[1])
            if line >= len(emotions):
                raise input_error(path, dialogue.id, f"a line index below {len(emotions)}", line)
            labels = [
                u.labels
                for u in dialogue.utterances
                if isinstance(u.labels, DailyDialogUtteranceLabels)
            ]
            got_emotions = [_EMOTION_CODES[lab.emotion] for lab in labels]
            got_acts = [_ACT_CODES[lab.act] for lab in labels]
            if got_emotions != emotions[line] or got_acts != acts[line]:
                raise input_error(
                    path,
                    dialogue.id,
                    f"the labels of line {line + 1} of ijcnlp_dailydialog/{split}/",
                    f"{got_emotions} / {got_acts}",
                )


_ACT_CODES: dict[str, int] = {name: code for code, name in ACTS.items()}
_EMOTION_CODES: dict[str, int] = {name: code for code, name in enumerate(EMOTIONS)}


def _label_lines(path: Path) -> list[list[int]]:
    lines: list[list[int]] = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        codes = line.split()
        if not all(c.isdigit() for c in codes):
            raise input_error(path, f"line {number}", "space-separated label codes", line)
        lines.append([int(c) for c in codes])
    return lines


def label_distributions(dialogues: Sequence[Dialogue]) -> dict[str, dict[str, int]]:
    """Counts of emotions and acts (all utterances and user utterances) and of topics."""
    labels = [
        (u.role, u.labels)
        for d in dialogues
        for u in d.utterances
        if isinstance(u.labels, DailyDialogUtteranceLabels)
    ]
    return {
        "emotion": distribution(lab.emotion for _, lab in labels),
        "user_emotion": distribution(lab.emotion for role, lab in labels if role is Role.USER),
        "act": distribution(lab.act for _, lab in labels),
        "topic": distribution(
            d.meta.topic for d in dialogues if isinstance(d.meta, DailyDialogMeta)
        ),
        "split": distribution(d.split for d in dialogues),
    }
