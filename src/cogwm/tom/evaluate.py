"""Scoring models on DialToM items; every answer is stored with its raw output.

Multiple-choice items are scored with one model call each (``Model.score_choices``): by the
option letters' log-probabilities where the backend gives them, else by the letter parsed from
the generated answer. An answer that cannot be parsed counts as wrong and is stored with
``parsed = 0`` so that it is also reported on its own. A model call that fails after the model
interface's retries is an infrastructure failure: it is not stored, not counted as wrong, and is
tried again by ``--resume``.

Circular evaluation (as OpenCompass's CircularEval), ``circular=True``: besides the seeded
order, the item is asked once per rotation of that order ("None of the above" stays last); the
item counts as circularly correct only when every rotation is answered right. The rotations
belong to the same run as the plain answers (rotation 0), so the plain and the circular rate come
from one run; a plain run can be made circular later with ``resume``.

Reasoning models (``reasoning_tokens``): the model thinks within that token budget before its
answer, and the final letter is extracted by the rule documented in :mod:`cogwm.tom.reasoning`;
the raw reply, thinking included, is stored as the answer's ``raw``. The budget is part of the
run's id and config.

The reasoning-injection probe: a *teacher* reasons about each item (:func:`teacher_reasoning`);
its option references are masked (:func:`mask_option_references`); a *student* then answers with
that reasoning in its prompt (``condition = "injected:<teacher>"``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cogwm.errors import InputError
from cogwm.models import Model
from cogwm.models.types import ChoiceScores, Message, ModelCallError, Sampling
from cogwm.tom.items import ToMItem, Variant
from cogwm.tom.prompts import (
    HISTORIES,
    HISTORY_FULL,
    HISTORY_WINDOW,
    PROMPT_VERSION,
    Presentation,
    masking_messages,
    mc_messages,
    open_messages,
    permutation,
    reasoning_messages,
)
from cogwm.tom.reasoning import reasoned_choice
from cogwm.tom.store import AnswerRow, RunInfo, ToMStore

PLAIN = "plain"
MASK = "[MASK]"
OPEN_SAMPLING = Sampling(temperature=0.0, max_tokens=120)
#: The teacher's reasoning budget for the injection probe: a reasoning model's whole thought.
TEACHER_REASONING_TOKENS = 4096


#: Masking paths recorded per item: the model's rewrite as it was, the rewrite with references
#: the regular expressions still found masked, and the regular expressions alone (no model, or
#: the model call failed).
MASK_PATH_MODEL = "model"
MASK_PATH_MODEL_REGEX = "model+regex"
MASK_PATH_REGEX = "regex"
MASK_PATH_FALLBACK = "regex (model failed)"
MASKING_SAMPLING = Sampling(temperature=0.0, max_tokens=500)


def injected_condition(teacher: str, masker: str | None = None) -> str:
    """The condition name of answers given with ``teacher``'s masked reasoning.

    ``masker`` is the model that masked it (None: the regular expressions).
    """
    return f"injected:{teacher}" if masker is None else f"injected:{teacher}|masked-by:{masker}"


def run_id_for(
    model: str,
    condition: str,
    seed: int,
    prompt_version: str = PROMPT_VERSION,
    history: str = HISTORY_WINDOW,
    reasoning_tokens: int | None = None,
) -> str:
    """The id of a run: a hash of everything that changes its answers.

    The history mode and the reasoning budget enter the hash only when they are not the
    defaults, so the ids of plain window runs are those of runs made before they existed.
    """
    parts: list[object] = [model, condition, seed, prompt_version]
    if history != HISTORY_WINDOW:
        parts.append(f"history:{history}")
    if reasoning_tokens is not None:
        parts.append(f"reasoning:{reasoning_tokens}")
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


@dataclass
class EvalSummary:
    """What one ``evaluate`` call did."""

    run_id: str
    answered: int = 0
    skipped: int = 0  # already answered (resume)
    failed: int = 0  # model-call failures, not stored, retried on resume
    unparsed: int = 0
    missing_reasoning: int = 0
    rotated: int = 0  # items asked in every rotation (circular runs)
    history: str = HISTORY_WINDOW
    reasoning_tokens: int | None = None  # the thinking budget of a reasoning run
    prompt_words: list[int] = field(default_factory=list)  # words of each prompt asked

    @property
    def prompt_length(self) -> tuple[float, int] | None:
        """Mean and maximum prompt length in words, or None when nothing was asked."""
        if not self.prompt_words:
            return None
        return sum(self.prompt_words) / len(self.prompt_words), max(self.prompt_words)

    paths: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def score_answer(
    run_id: str, item: ToMItem, shown: Presentation, choice: str | None, **stored: object
) -> AnswerRow:
    """The stored row of one answer (``choice`` None = unparsed, counted wrong)."""
    gold_letter = shown.gold_letter(item)
    return AnswerRow(
        run_id=run_id,
        item_id=item.id,
        permutation=shown.order,
        letters=shown.letters,
        gold_letter=gold_letter,
        choice=choice,
        chosen_index=shown.option_index(choice) if choice is not None else None,
        correct=choice == gold_letter,
        parsed=choice is not None,
        **stored,  # type: ignore[arg-type]
    )


async def evaluate(
    items: Sequence[ToMItem],
    model: Model,
    store: ToMStore,
    *,
    seed: int = 0,
    condition: str = PLAIN,
    teacher: str | None = None,
    masker: str | None = None,
    resume: bool = False,
    circular: bool = False,
    history: str = HISTORY_WINDOW,
    reasoning_tokens: int | None = None,
    concurrency: int = 4,
    on_progress: Callable[[], None] | None = None,
) -> EvalSummary:
    """Ask ``model`` every item and store the answers.

    Args:
        items: Validated items (multiple-choice and open-ended).
        model: The subject.
        store: Where items, the run and the answers go.
        seed: Seed of the option permutations (part of the run's identity).
        condition: ``plain``, or ``injected:<teacher>`` (then ``teacher`` is required and its
            stored reasoning is shown).
        teacher: The teacher model of an injection run.
        masker: The model whose masking of the teacher's reasoning is shown (stored by
            :func:`mask_reasoning`); None shows the regular-expression masking.
        resume: Continue a run that has answers; without it such a run is an error.
        circular: Also ask every other rotation of each item's options (see the module doc).
        history: What retrospective items show: ``window`` (the item's window) or ``full``
            (the whole session up to the window's end); recorded with the run and part of
            its id.
        reasoning_tokens: Let the model think within this many tokens before answering a
            multiple-choice item (see :mod:`cogwm.tom.reasoning`); None asks for the letter
            alone. Recorded with the run and part of its id.
        concurrency: Items in flight at once.
        on_progress: Called after each item.

    Raises:
        InputError: The run already has answers and ``resume`` is false; an unknown history
            mode; ``full`` history for an item built without the session before its window.
    """
    settings = {
        "model": model.spec,
        "condition": condition,
        "seed": seed,
        "teacher": teacher,
        "masker": masker,
        "prompt_version": PROMPT_VERSION,
        "circular": circular,
        "history": history,
        "reasoning_tokens": reasoning_tokens,
    }
    run, done = _open_run(items, model, store, settings, resume=resume)
    reasoning = _shown_reasoning(store, teacher, seed, masker)
    summary = EvalSummary(run_id=run.run_id, history=history, reasoning_tokens=reasoning_tokens)
    ask = _Asking(model, store, run, reasoning, summary)
    await ask.all(items, done, circular=circular, concurrency=concurrency, on_progress=on_progress)
    return summary


@dataclass
class _Asking:
    """One evaluation run's asking: the subject, where answers go, the reasoning shown."""

    model: Model
    store: ToMStore
    run: RunInfo
    reasoning: dict[str, str] | None
    summary: EvalSummary

    async def all(
        self,
        items: Sequence[ToMItem],
        done: set[str],
        *,
        circular: bool,
        concurrency: int,
        on_progress: Callable[[], None] | None,
    ) -> None:
        """Ask the items not answered yet, and (``circular``) the rotations of the
        multiple-choice items not rotated yet; counts the skipped ones."""
        limit = asyncio.Semaphore(concurrency)
        already = self.store.rotated_ids(self.run.run_id) if circular else set()

        def to_rotate(item: ToMItem) -> bool:
            return circular and item.variant is not Variant.OPEN and item.id not in already

        async def one(item: ToMItem) -> None:
            async with limit:
                args = (self.model, self.store, self.run, self.reasoning, self.summary)
                if item.id not in done:
                    await _answer(item, *args)
                if to_rotate(item):
                    await _rotations(item, *args)
            if on_progress is not None:
                on_progress()

        todo = [i for i in items if i.id not in done or to_rotate(i)]
        self.summary.skipped = len(items) - len(todo)
        await asyncio.gather(*(one(i) for i in todo))


def _open_run(
    items: Sequence[ToMItem],
    model: Model,
    store: ToMStore,
    settings: dict[str, Any],
    *,
    resume: bool,
) -> tuple[RunInfo, set[str]]:
    """Check ``settings``, store the items and the run (made or found), marked circular if
    asked; the run and the ids of the items it has answered.

    ``settings`` holds the run's recorded configuration: model, condition, seed, teacher,
    masker, prompt_version, circular, history and reasoning_tokens.

    Raises:
        InputError: A bad history or reasoning budget; answers stored and ``resume`` false.
    """
    reasoning_tokens = settings["reasoning_tokens"]
    _check_history(items, settings["history"])
    if reasoning_tokens is not None and reasoning_tokens < 1:
        raise InputError(f"the reasoning budget must be at least 1 token, got {reasoning_tokens}")
    condition, seed = settings["condition"], settings["seed"]
    run = RunInfo(
        run_id_for(
            model.identity,
            condition,
            seed,
            history=settings["history"],
            reasoning_tokens=reasoning_tokens,
        ),
        model.spec,
        condition,
        settings["teacher"],
        seed,
        PROMPT_VERSION,
    )
    store.put_items(items)
    store.ensure_run(run, settings)
    if settings["circular"]:
        store.mark_circular(run.run_id)
    done = store.answered_ids(run.run_id)
    if done and not resume:
        raise InputError(
            f"run {run.run_id} ({model.spec}, {condition}, seed {seed}) already has {len(done)} "
            f"answers in {store.path}; pass --resume to continue it"
        )
    return run, done


async def _answer(
    item: ToMItem,
    model: Model,
    store: ToMStore,
    run: RunInfo,
    reasoning: dict[str, str] | None,
    summary: EvalSummary,
) -> None:
    hint = None
    if reasoning is not None:
        hint = reasoning.get(item.id)
        if hint is None:
            summary.missing_reasoning += 1
            return
    try:
        if item.variant is Variant.OPEN:
            messages = open_messages(item, summary.history)
            summary.prompt_words.append(_words(messages))
            completion = await model.generate(messages, OPEN_SAMPLING, tag="tom-open")
            store.put_open_answer(run.run_id, item.id, completion.text, completion.call_id)
            summary.paths["generated"] += 1
        else:
            shown = permutation(item, run.seed)
            messages = mc_messages(item, shown, reasoning=hint, history=summary.history)
            summary.prompt_words.append(_words(messages))
            scores = await _choose(model, messages, shown.letters, summary.reasoning_tokens)
            row = score_answer(
                run.run_id,
                item,
                shown,
                scores.choice,
                path=scores.path.value,
                raw=scores.raw,
                probs=scores.probs,
                call_id=scores.call_id,
            )
            store.put_answer(row)
            summary.paths[scores.path.value] += 1
            summary.unparsed += not row.parsed
    except ModelCallError as exc:
        summary.failed += 1
        if len(summary.failures) < 5:
            summary.failures.append(f"{item.id}: {exc.reason}")
        return
    summary.answered += 1


async def _choose(
    model: Model, messages: list[Message], letters: list[str], reasoning_tokens: int | None
) -> ChoiceScores:
    """The model's choice: a bare letter, or the final letter after thinking within a budget."""
    if reasoning_tokens is None:
        return await model.score_choices(messages, letters, tag="tom-eval")
    return await reasoned_choice(model, messages, letters, reasoning_tokens, tag="tom-eval")


def _shown_reasoning(
    store: ToMStore, teacher: str | None, seed: int, masker: str | None
) -> dict[str, str] | None:
    if teacher is None:
        return None
    if masker is None:
        return store.reasoning(teacher, seed)
    return {item: masked for item, (masked, _) in store.masks(teacher, seed, masker).items()}


def _check_history(items: Sequence[ToMItem], history: str) -> None:
    if history not in HISTORIES:
        raise InputError(f"--history must be one of {', '.join(HISTORIES)}, got {history!r}")
    if history == HISTORY_FULL:
        lacking = [i.id for i in items if i.lacks_earlier]
        if lacking:
            raise InputError(
                f"{len(lacking)} retrospective items (e.g. {lacking[0]!r}) have no record of the "
                "session before their window; rebuild them with this version to use --history full"
            )


def _words(messages: Sequence[Message]) -> int:
    return sum(len(m.content.split()) for m in messages)


def rotations(shown: Presentation) -> list[Presentation]:
    """Every other rotation of a presentation's order; "None of the above" stays last.

    Rotation ``k`` shows the option of letter ``k`` first, so over all rotations every option
    is shown under every letter once.
    """
    movable = len(shown.order) - (1 if shown.has_fixed_last else 0)
    head, tail = shown.order[:movable], shown.order[movable:]
    return [shown._replace(order=head[k:] + head[:k] + tail) for k in range(1, movable)]


async def _rotations(
    item: ToMItem,
    model: Model,
    store: ToMStore,
    run: RunInfo,
    reasoning: dict[str, str] | None,
    summary: EvalSummary,
) -> None:
    hint = reasoning.get(item.id) if reasoning is not None else None
    if reasoning is not None and hint is None:
        return  # counted as missing reasoning by the plain answer
    rows: list[AnswerRow] = []
    try:
        for shown in rotations(permutation(item, run.seed)):
            messages = mc_messages(item, shown, reasoning=hint, history=summary.history)
            scores = await _choose(model, messages, shown.letters, summary.reasoning_tokens)
            rows.append(
                score_answer(
                    run.run_id,
                    item,
                    shown,
                    scores.choice,
                    path=scores.path.value,
                    raw=scores.raw,
                    probs=scores.probs,
                    call_id=scores.call_id,
                )
            )
    except ModelCallError as exc:
        summary.failed += 1  # no rotation stored: the item is asked again on resume
        if len(summary.failures) < 5:
            summary.failures.append(f"{item.id} (rotation): {exc.reason}")
        return
    store.put_rotations(rows)
    summary.rotated += 1


# -- reasoning injection -------------------------------------------------------

_ANSWER_SENTENCE = re.compile(
    r"(answer is|correct answer|correct option|right answer|final answer|i choose|i pick|"
    r"i would choose|i'd choose|best option is|best answer|so the answer|"
    # "Answer: A" / "**Answer:** A" / "Final choice: A" (the teacher is told to end with its answer)
    r"\banswer\W*:|\b(?:final|my) (?:choice|pick|option)\b|\bgo with\b|\bbest fit is\b)",
    re.IGNORECASE,
)
_QUOTE_NGRAM = 6
#: Shorter options are masked when quoted whole (at least this many words).
_MIN_QUOTE_WORDS = 2
#: A double-quoted span of the reasoning (straight or curly quotes).
_QUOTED_SPAN = re.compile(r"[\"“]([^\"“”]+)[\"”]")


def mask_option_references(text: str, letters: Sequence[str], options: Sequence[str]) -> str:
    """A teacher's reasoning with its references to options masked.

    Masks option letters ("Option B", "(C)", "B)", "options A and D", a standalone "C"; "A" and
    "I" only where they cannot be the English words, i.e. not before a lower-case word or an
    apostrophe), verbatim quotes of an option (runs of 6 or more of its words, or the whole of a
    shorter option), double-quoted parts of an option ("feeling sad"), and drops sentences that
    declare the answer ("the answer is ...", "Answer: A").
    """
    sentences = re.split(r"(?<=[.!?])\s+|\n+", text.strip())
    kept = [s for s in sentences if s and not _ANSWER_SENTENCE.search(s)]
    masked = _mask_quoted_spans(" ".join(kept), options)
    masked = _mask_quotes(masked, options)
    return _mask_letters(masked, letters)


def _mask_letters(text: str, letters: Sequence[str]) -> str:
    alt = "|".join(re.escape(x) for x in letters) or "A"
    group = rf"(?:{alt})"
    text = re.sub(
        rf"\b(?:options?|choices?|answers?|alternatives?)\s*\(?{group}\)?"
        rf"(?:\s*(?:,|and|or|&)\s*\(?{group}\)?)*\b",
        MASK,
        text,
        flags=re.IGNORECASE,
    )
    text = re.sub(rf"\(\s*{group}\s*\)", MASK, text)
    text = re.sub(rf"(^|\s){group}[).:](?=\s|$)", rf"\1{MASK}", text)
    plain = [x for x in letters if x not in _ENGLISH_WORDS]
    if plain:
        text = re.sub(rf"\b(?:{'|'.join(map(re.escape, plain))})\b", MASK, text)
    english = [x for x in letters if x in _ENGLISH_WORDS]
    if english:
        # "A fits" / "I think" / "I'm" are words; "choose A," / "is A" are letters.
        alt_words = "|".join(map(re.escape, english))
        text = re.sub(rf"\b(?:{alt_words})\b(?!\s+[a-z]|['’])", MASK, text)
    return text


_ENGLISH_WORDS = frozenset({"A", "I"})


def _tokens(text: str) -> list[str]:
    return [t for t in (re.sub(r"\W+", "", w).casefold() for w in text.split()) if t]


def _mask_quoted_spans(text: str, options: Sequence[str]) -> str:
    """Double-quoted spans of 2+ words that are a contiguous part of an option."""
    option_tokens = [" ".join(_tokens(o)) for o in options]

    def replace(match: re.Match[str]) -> str:
        span = _tokens(match.group(1))
        if len(span) < _MIN_QUOTE_WORDS:
            return match.group(0)
        needle = " ".join(span)
        hit = any(f" {needle} " in f" {tokens} " for tokens in option_tokens)
        return MASK if hit else match.group(0)

    return _QUOTED_SPAN.sub(replace, text)


def _mask_quotes(text: str, options: Sequence[str]) -> str:
    words = text.split()
    norm = [re.sub(r"\W+", "", w).casefold() for w in words]
    grams: dict[int, set[tuple[str, ...]]] = {}  # n -> option n-grams
    for option in options:
        tokens = [re.sub(r"\W+", "", w).casefold() for w in option.split()]
        # a short option is a reference only when quoted whole
        n = min(_QUOTE_NGRAM, len(tokens))
        if n < _MIN_QUOTE_WORDS:
            continue
        grams.setdefault(n, set()).update(
            tuple(tokens[k : k + n]) for k in range(len(tokens) - n + 1)
        )
    covered = [False] * len(words)
    for n, known in grams.items():
        for k in range(len(words) - n + 1):
            if tuple(norm[k : k + n]) in known:
                covered[k : k + n] = [True] * n
    out: list[str] = []
    for word, hidden in zip(words, covered, strict=True):
        if not hidden:
            out.append(word)
        elif not out or out[-1] != MASK:
            out.append(MASK)
    return " ".join(out)


async def teacher_reasoning(
    items: Sequence[ToMItem],
    teacher: Model,
    store: ToMStore,
    *,
    seed: int = 0,
    max_tokens: int = TEACHER_REASONING_TOKENS,
    concurrency: int = 4,
    on_progress: Callable[[], None] | None = None,
) -> EvalSummary:
    """Have ``teacher`` reason about every multiple-choice item; store it raw and masked.

    The teacher may think within ``max_tokens``; where its server returns the thinking apart
    from the answer, the stored raw reasoning is the thinking followed by the answer. Items that
    already have reasoning from this teacher and seed are skipped.
    """
    sampling = Sampling(temperature=0.0, max_tokens=max_tokens)
    store.put_items(items)
    have = store.reasoning(teacher.spec, seed)
    summary = EvalSummary(run_id=f"reasoning:{teacher.spec}")
    limit = asyncio.Semaphore(concurrency)

    async def one(item: ToMItem) -> None:
        async with limit:
            shown = permutation(item, seed)
            try:
                completion = await teacher.generate(
                    reasoning_messages(item, shown), sampling, tag="tom-teacher"
                )
            except ModelCallError as exc:
                summary.failed += 1
                if len(summary.failures) < 5:
                    summary.failures.append(f"{item.id}: {exc.reason}")
                return
            finally:
                if on_progress is not None:
                    on_progress()
        text = "\n".join(t for t in (completion.reasoning, completion.text) if t)
        masked = mask_option_references(text, shown.letters, item.options)
        store.put_reasoning(teacher.spec, item.id, seed, text, masked, completion.call_id)
        summary.answered += 1

    todo = [i for i in items if i.variant is not Variant.OPEN and i.id not in have]
    summary.skipped = len(items) - len(todo)
    await asyncio.gather(*(one(i) for i in todo))
    return summary


async def mask_reasoning(
    items: Sequence[ToMItem],
    teacher: str,
    masker: Model,
    store: ToMStore,
    *,
    seed: int = 0,
    concurrency: int = 4,
    on_progress: Callable[[], None] | None = None,
) -> Counter[str]:
    """Have ``masker`` hide the option references in ``teacher``'s stored reasoning.

    The model's rewrite is checked with the regular expressions: what they still find is
    masked too (path ``model+regex``); a failed model call falls back to the regular
    expressions alone (``regex (model failed)``). The path is stored per item; returns the
    count of each path. Items already masked by this model are skipped.
    """
    raw = store.raw_reasoning(teacher, seed)
    done = store.masks(teacher, seed, masker.spec)
    todo = [i for i in items if i.id in raw and i.id not in done and i.variant is not Variant.OPEN]
    paths: Counter[str] = Counter()
    limit = asyncio.Semaphore(concurrency)

    async def one(item: ToMItem) -> None:
        shown = permutation(item, seed)
        async with limit:
            try:
                completion = await masker.generate(
                    masking_messages(item, shown, raw[item.id]), MASKING_SAMPLING, tag="tom-mask"
                )
                text, call_id = completion.text.strip(), completion.call_id
                checked = mask_option_references(text, shown.letters, item.options)
                path = MASK_PATH_MODEL if checked == _normal(text) else MASK_PATH_MODEL_REGEX
            except ModelCallError:
                checked = mask_option_references(raw[item.id], shown.letters, item.options)
                path, call_id = MASK_PATH_FALLBACK, ""
        store.put_mask(teacher, item.id, seed, masker.spec, checked, path, call_id)
        paths[path] += 1
        if on_progress is not None:
            on_progress()

    await asyncio.gather(*(one(i) for i in todo))
    return paths


def _normal(text: str) -> str:
    """``text`` as :func:`mask_option_references` joins it when it masks nothing."""
    return " ".join(text.split())
