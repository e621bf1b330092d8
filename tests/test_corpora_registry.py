"""The corpus registry is the one source of what cogwm knows per corpus.

Every corpus is a package ``cogwm.corpora.<name>`` whose ``CORPUS`` the registry lists; the code
around the packages (the rest of ``corpora``, ``annotate``, the samples' split, clean and build
steps) reads a corpus's facts from that record instead of naming the corpus.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import cogwm
from cogwm import corpora
from cogwm.annotate import human
from cogwm.corpora import Corpus
from cogwm.corpora.labels.table import MappingTable
from cogwm.errors import InputError
from cogwm.schema import BigFive, Dialogue, Role, Utterance
from cogwm.schema.labels import (
    ESConvMeta,
    ESConvSurvey,
    InspiredMeta,
    InspiredSurvey,
    P4GMeta,
    P4GParticipant,
)
from cogwm.simulator import clean, splits
from cogwm.simulator.build import human_corpus
from cogwm.simulator.samples import task_for_corpus

SRC = Path(cogwm.__file__).resolve().parent
#: Packages under ``corpora`` that hold shared machinery rather than one corpus.
SHARED_PACKAGES = {"labels"}


def _corpus_packages() -> list[str]:
    return [
        info.name
        for info in pkgutil.iter_modules(corpora.__path__)
        if info.ispkg and info.name not in SHARED_PACKAGES
    ]


def test_every_corpus_package_is_registered_and_nothing_else_is() -> None:
    # Catches: a corpus package the registry does not list, or a registered Corpus built
    # outside its package (two sources of one corpus's facts).
    packages = _corpus_packages()
    assert sorted(packages) == sorted(corpora.every_name())
    for name in packages:
        module = importlib.import_module(f"cogwm.corpora.{name}")
        assert module.CORPUS is corpora.lookup(name), name


def test_every_corpus_has_a_loader_and_a_human_label_table() -> None:
    # Catches: a corpus added without its mapping, or a table filed under another corpus.
    for corpus in corpora.EVERY:
        assert callable(corpus.loader) and callable(corpus.labeller), corpus.name
        assert isinstance(corpus.label_table, MappingTable) and corpus.label_table.rows
        # A companion maps its labels with its release's table (one table, one set of rules).
        assert corpus.label_table.corpus == (corpus.companion_of or corpus.name)
        assert corpus.release.dialogues > 0 and corpus.release.utterances > 0


def test_releases_and_companions() -> None:
    # Catches: FailedESConv listed as a release (it would appear in `cogwm data list` and
    # `corpora.names()`), or a companion whose release the registry does not know.
    assert corpora.names() == [c.name for c in corpora.CORPORA]
    assert corpora.every_name() == [*corpora.names(), "failed_esconv"]
    for companion in corpora.COMPANIONS:
        assert companion.companion_of in corpora.names()
        assert companion.folder == corpora.get(companion.companion_of).folder
        with pytest.raises(InputError, match="unknown corpus"):
            corpora.get(companion.name)
    assert corpora.find(" FailedESConv ") is corpora.lookup("failed_esconv")
    assert corpora.find("failed-esconv") is corpora.lookup("failed_esconv")
    assert corpora.find("P4G") is corpora.get("persuasionforgood")
    assert corpora.find("durecdial") is None and corpora.lookup("P4G") is None


def test_annotate_human_reads_the_registry() -> None:
    # Catches: a human-label table or corpus name kept in annotate.human beside the registry.
    assert human.names() == corpora.every_name()
    assert {c.name: c.label_table for c in corpora.EVERY} == human.TABLES
    assert human.rows("failedesconv") == corpora.get("esconv").label_table.rows


def test_the_samples_read_corpus_facts_from_the_registry() -> None:
    # Catches: the samples forgetting that a companion plays its release's task, that
    # DailyDialog's speakers are each the user once, or which corpora have a hold-out.
    assert task_for_corpus("failed_esconv").name == task_for_corpus("esconv").name == "ESC"
    assert human_corpus("Failed-ESConv") == "failed_esconv"
    assert frozenset({"dailydialog"}) == clean.EVERY_SPEAKER_IS_USER
    assert frozenset({splits.ANNOMI, splits.FAILED_ESCONV}) == splits.HOLDOUT_CORPORA


def _dialogue(corpus: str, meta: object) -> Dialogue:
    utterance = Utterance(index=0, speaker="u", role=Role.USER, text="hi")
    plain = Dialogue(id=f"{corpus}:1", corpus=corpus, utterances=[utterance])
    return plain.model_copy(update={"meta": meta})


def test_profiles_come_from_each_corpus_questionnaire() -> None:
    # Catches: a corpus's profile_traits left out of the registry loop (INSPIRED's seekers would
    # get no profile), or traits read from the wrong corpus's metadata.
    from cogwm.corpora.profiles import profile_from_metadata

    scores = {
        "openness": 4.0,
        "conscientiousness": 3.0,
        "extraversion": 2.0,
        "agreeableness": 5.0,
        "neuroticism": 1.0,
    }
    person = P4GParticipant(user_id="u", actual_donation=0.0, num_turns=10, traits=dict(scores))
    p4g = P4GMeta(annotated=False, persuader=person, persuadee=person)
    # The survey's other fields play no part in the profile.
    inspired = InspiredMeta.model_construct(
        survey=InspiredSurvey.model_construct(seeker_personality=dict(scores))
    )
    for corpus, meta in (("persuasionforgood", p4g), ("inspired", inspired)):
        profile = profile_from_metadata(_dialogue(corpus, meta))
        assert profile is not None and profile.big_five == BigFive(**scores), corpus
    unsurveyed = InspiredMeta.model_construct(survey=None)
    assert profile_from_metadata(_dialogue("inspired", unsurveyed)) is None


def _corpus_literals(path: Path) -> list[str]:
    names = set(corpora.every_name())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_code_around_the_corpus_packages_names_no_corpus() -> None:
    # Catches: a per-corpus dict or if/elif coming back outside the corpus's package (adding a
    # corpus would then mean editing it too, not only adding a package).
    packages = {SRC / "corpora" / name for name in _corpus_packages()}
    around = [
        *(p for p in (SRC / "corpora").rglob("*.py") if not packages & set(p.parents)),
        *(SRC / "annotate").rglob("*.py"),
        *(SRC / "simulator" / name for name in ("samples.py", "build.py", "clean.py")),
    ]
    found = {str(p.relative_to(SRC)): _corpus_literals(p) for p in around}
    assert {path: names for path, names in found.items() if names} == {}


def test_a_corpus_record_is_frozen() -> None:
    # Catches: a Corpus that code could change at run time (the registry would stop being data).
    corpus: Corpus = corpora.get("esconv")
    with pytest.raises(AttributeError):
        corpus.name = "other"  # type: ignore[misc]


def test_a_missing_companion_folder_names_the_companion_file(tmp_path: Path) -> None:
    # Catches: FailedESConv read from a missing ESConv folder with a message that does not say
    # which file was looked for (the release's folder holds several).
    companion = corpora.find("failed_esconv")
    assert companion is not None
    with pytest.raises(InputError, match=r"esconv: directory not found \(expected FailedESConv"):
        corpora.read(companion, tmp_path)


def test_the_situation_comes_from_the_corpus_that_states_one() -> None:
    # Catches: the situation no longer read from the corpora (ESConv and FailedESConv samples
    # would show the task's generic scenario instead of the seeker's own words), or the
    # emotion type (the first seeker turn's human label) shown in the prompt.
    from cogwm import tasks
    from cogwm.simulator.samples import sample_context

    esc = tasks.get("ESC")
    meta = ESConvMeta(
        experience_type="x",
        emotion_type="anxiety",
        problem_type="job crisis",
        situation=" I lost my job. ",
        survey=ESConvSurvey(),
    )
    for corpus in ("esconv", "failed_esconv"):
        context = sample_context(_dialogue(corpus, meta), esc)
        assert context == "I lost my job. (problem: job crisis)", corpus
    assert sample_context(_dialogue("annomi", None), tasks.get("MI")) == tasks.get("MI").scenario
