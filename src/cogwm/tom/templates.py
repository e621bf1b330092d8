"""Template items from the corpora's human labels: an LLM-free source of DialToM items.

Each *label scheme* turns one human label into a statement about the recipient; the distractors
are the statements of the label's other values. A label with fewer than 4 values gives items
with fewer options (the random baseline is then 1/options).

Which label is *about* a window (the gold of the window's retrospective item):

- **AnnoMI** ``client_talk_type`` (expert codes; change / neutral / sustain): the talk type of
  the *last client utterance in the window* that has one. Attribute: desire (motivation toward
  the target behaviour; AnnoMI pools DARN-CAT change talk, so the direction is shared by B/D/I,
  and desire, "change desire" in the MI task, is its closest single attribute). 3 options.
- **ESConv** ``emotion_type`` (the seeker's self-report *before* the chat): only the session's
  *first window*, since later windows may already show a changed emotion. Attribute: emotion.
  4 options; distractors come from the values seekers chose at least 40 times, never a
  near-synonym of the gold and never two near-synonyms together (:data:`EMOTION_NEAR_SYNONYMS`:
  anxious / afraid / nervous, sad / depressed / hurt, ashamed / guilty).
- **PersuasionForGood** persuadee acts ``ee_label_1``/``ee_label_2`` (trained annotators, the 300
  annotated dialogues): the persuadee's *last* donation-reaction act in the window
  (positive / neutral / negative reaction, attribute desire, 3 options) and their last donation
  decision act (agree, provide an amount or confirm = commits; disagree = declines;
  ask-donation-procedure = considering; attribute intention, 3 options).
  ``disagree-donation-more`` (declines to give *more*) sets no new value, as in LABELS.md.
  Read against the session so far: asking how to donate after having agreed (or named an
  amount) is ``commits``; a refusal after a pledge is ambiguous and dropped.
- **PersuasionForGood** intended donation ``B5`` (annotated from the dialogue text, 217
  persuadees): binned into $0 / up to $0.50 / under $2 / $2 or more, on the window holding the
  persuadee's last donation-decision act (else the last window); dropped where the last amount
  the persuadee states in a donation sentence falls in another bin. Attribute intention,
  4 options.
- **AnnoMI** golds from an utterance the annotators split on evenly (``AnnoMI-full.csv``) are
  dropped when the per-annotator votes are given.

Template items are tagged ``base`` (label-contrast distractors), not ``hard`` (adversarial).
The majority-answer baseline of their statistics comes from :func:`answer_classes`.

Prospective template items (AnnoMI and the two PersuasionForGood act schemes) show the
recipient's label-derived profile at the end of window *i*; the gold is the opening of window
*i+1*; each distractor is the opening of another window *j+1* of the *same* session whose window
*j* ended in a *different* label value (one per other value, the one nearest in length), so
topic cannot give the answer away but the profile can. An item is kept only when, by the corpus's
labels on the recipient's utterances shown in each option, its gold is strictly more consistent
with the profile than every distractor (most MI items are not; the build reports the drops).
ESConv has no per-window label, so it has no prospective template items; neither does the
intended donation, which is one value a session.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from cogwm.corpora import word_count
from cogwm.corpora.annomi.annotators import UtteranceKey, UtteranceVotes
from cogwm.schema import Role, Utterance
from cogwm.schema.labels import AnnoMIMeta, AnnoMIUtteranceLabels, ESConvMeta, P4GMeta
from cogwm.tom.contexts import Context, continuation_text
from cogwm.tom.distractors import template_rationale
from cogwm.tom.items import (
    Attribute,
    Domain,
    Provenance,
    Source,
    Task,
    ToMItem,
    Variant,
    option_key,
)

#: Default seed of every random choice made while building template items.
DEFAULT_SEED = 13


@dataclass(frozen=True)
class Gold:
    """The label value a scheme finds for a context."""

    value: str  # canonical value, a key of the scheme's statements
    raw: str  # the label as the corpus has it
    utterance_id: int | None = None  # AnnoMI: the labelled utterance (for the annotators' votes)


@dataclass(frozen=True)
class LabelScheme:
    """How one human label becomes DialToM items."""

    name: str
    domain: Domain
    attribute: Attribute
    label_field: str
    question: str
    statements: dict[str, str]  # canonical value -> statement template ({topic} allowed)
    find: Callable[[Context], Gold | None]
    families: dict[str, str] = field(default_factory=dict)  # value -> family (default: itself)
    distractor_values: tuple[str, ...] | None = None  # allowed distractors (default: all)
    prospective: bool = True
    max_options: int = 4
    #: Resolves a found gold against the rest of the session: the gold (maybe another value)
    #: or the reason to drop the item.
    check: Callable[[Context, Gold], Gold | str] | None = None
    #: The canonical values an utterance of the recipient carries (prospective consistency).
    utterance_values: Callable[[Utterance], list[str]] | None = None

    def family(self, value: str) -> str:
        """The family of a value (values of one family are never each other's distractors)."""
        return self.families.get(value, value)

    def statement(self, value: str, context: Context) -> str:
        """The statement for ``value`` in ``context``."""
        template = self.statements.get(value, self.statements.get("*", "{value}"))
        return template.format(topic=_topic(context), value=value)


def _topic(context: Context) -> str:
    meta = context.dialogue.meta
    if isinstance(meta, AnnoMIMeta) and meta.topic:
        return meta.topic
    return "the target behaviour"


# -- finding the label about a window ------------------------------------------


def _annomi_talk_type(context: Context) -> Gold | None:
    for utterance in reversed(context.utterances):
        labels = utterance.labels
        if (
            utterance.role is Role.USER
            and isinstance(labels, AnnoMIUtteranceLabels)
            and labels.client_talk_type
        ):
            return Gold(
                value=labels.client_talk_type,
                raw=labels.client_talk_type,
                utterance_id=labels.utterance_id,
            )
    return None


def _esconv_emotion(context: Context) -> Gold | None:
    meta = context.dialogue.meta
    if context.index != 0 or not isinstance(meta, ESConvMeta) or not meta.emotion_type:
        return None
    return Gold(value=meta.emotion_type.strip().lower(), raw=meta.emotion_type)


def _persuadee_acts(utterances: Iterable[Utterance]) -> list[str]:
    """The persuadee's sentence acts in order (``ee_label_1`` then ``ee_label_2``)."""
    acts: list[str] = []
    for utterance in utterances:
        labels = utterance.labels
        sentences = getattr(labels, "sentences", None) if utterance.role is Role.USER else None
        for sentence in sentences or []:
            acts.extend(a for a in (sentence.ee_label_1, sentence.ee_label_2) if a)
    return acts


REACTION_ACTS = {
    "positive-reaction-to-donation": "positive",
    "neutral-reaction-to-donation": "neutral",
    "negative-reaction-to-donation": "negative",
}
DECISION_ACTS = {
    "agree-donation": "commits",
    "provide-donation-amount": "commits",
    "confirm-donation": "commits",
    "disagree-donation": "declines",
    "ask-donation-procedure": "considering",
}
#: Acts that mark a donation decision in the text (where the intended donation is placed).
DONATION_DECISION_ACTS = frozenset(
    {
        "agree-donation",
        "provide-donation-amount",
        "confirm-donation",
        "disagree-donation",
        "disagree-donation-more",
    }
)


def _last_act(context: Context, acts: dict[str, str]) -> Gold | None:
    found = [a for a in _persuadee_acts(context.utterances) if a in acts]
    return Gold(value=acts[found[-1]], raw=found[-1]) if found else None


def _p4g_reaction(context: Context) -> Gold | None:
    return _last_act(context, REACTION_ACTS)


def _p4g_decision(context: Context) -> Gold | None:
    return _last_act(context, DECISION_ACTS)


def donation_bin(amount: float) -> str:
    """The bin of an intended donation in dollars (the task payment was $2)."""
    if amount <= 0:
        return "nothing"
    if amount <= 0.5:
        return "small"
    if amount < 2:
        return "moderate"
    return "all"


def intended_donation_window(contexts: Sequence[Context]) -> int:
    """Index (in ``contexts``, one session) of the window the intended donation is placed on."""
    for k in range(len(contexts) - 1, -1, -1):
        if DONATION_DECISION_ACTS.intersection(_persuadee_acts(contexts[k].utterances)):
            return k
    return len(contexts) - 1


def _p4g_intended(context: Context) -> Gold | None:
    meta = context.dialogue.meta
    if not isinstance(meta, P4GMeta) or meta.persuadee is None:
        return None
    amount = meta.persuadee.intended_donation
    if amount is None:
        return None
    return Gold(value=donation_bin(amount), raw=f"{amount:g}")


def _session_acts(context: Context) -> list[str]:
    """The persuadee's acts in the session up to this window's end."""
    return _persuadee_acts([*context.dialogue.utterances[: context.start], *context.utterances])


#: Drop reasons and resolutions counted by :func:`build_template_items`.
RESOLVED_CONSIDERING = "resolved: considering after a commitment -> commits"
DROP_DECLINES_AFTER_PLEDGE = "dropped: declines after a pledge"
DROP_B5_CONTRADICTS_TEXT = "dropped: intended donation contradicts the stated amount"
DROP_ANNOMI_TIE = "dropped: annotators split evenly on the gold utterance"
DROP_NOT_MOST_CONSISTENT = "dropped: a distractor is as consistent with the profile as the gold"


def _check_decision(context: Context, gold: Gold) -> Gold | str:
    """A decision read against the session so far.

    Asking how to donate after having agreed to (or named an amount) is acting on a commitment:
    the gold becomes ``commits``. A refusal after a pledge (often a refusal to give *more*,
    labelled as a plain refusal) is ambiguous: the item is dropped.
    """
    decisions = [a for a in _session_acts(context) if a in DECISION_ACTS]
    committed = [a for a in decisions[:-1] if DECISION_ACTS[a] == "commits"]
    if not committed:
        return gold
    if gold.value == "considering":
        return Gold(value="commits", raw=f"{gold.raw} after {committed[0]}")
    if gold.value == "declines":
        return DROP_DECLINES_AFTER_PLEDGE
    return gold


_AMOUNT = re.compile(
    r"\$\s?(\d+(?:\.\d+)?|\.\d+)|(\d+(?:\.\d+)?)\s*(?:dollars?|bucks)\b|(\d+)\s*cents?\b",
    re.IGNORECASE,
)
#: Persuadee acts whose sentences state the amount they mean to give.
_AMOUNT_ACTS = frozenset({"agree-donation", "provide-donation-amount", "confirm-donation"})


def stated_amounts(context: Context) -> list[float]:
    """Dollar amounts in the persuadee's donation sentences so far (session up to the window)."""
    amounts: list[float] = []
    for utterance in [*context.dialogue.utterances[: context.start], *context.utterances]:
        sentences = getattr(utterance.labels, "sentences", None)
        if utterance.role is not Role.USER or not sentences:
            continue
        for sentence in sentences:
            if {sentence.ee_label_1, sentence.ee_label_2} & _AMOUNT_ACTS:
                for match in _AMOUNT.finditer(sentence.text):
                    dollars, words, cents = match.groups()
                    value = float(dollars or words) if (dollars or words) else int(cents) / 100
                    amounts.append(value)
    return amounts


def _check_intended(context: Context, gold: Gold) -> Gold | str:
    """Drop an intended donation (B5) whose bin differs from the last amount the persuadee
    states in the dialogue (e.g. B5 = 5 where the persuadee says "Yes, $1")."""
    amounts = stated_amounts(context)
    if amounts and donation_bin(amounts[-1]) != gold.value:
        return DROP_B5_CONTRADICTS_TEXT
    return gold


def _annomi_values(utterance: Utterance) -> list[str]:
    labels = utterance.labels
    if isinstance(labels, AnnoMIUtteranceLabels) and labels.client_talk_type:
        return [labels.client_talk_type]
    return []


def _act_values(acts: dict[str, str]) -> Callable[[Utterance], list[str]]:
    def values(utterance: Utterance) -> list[str]:
        return [acts[a] for a in _persuadee_acts([utterance]) if a in acts]

    return values


# -- the schemes ---------------------------------------------------------------

_EMOTION_ADJECTIVES = {
    "anxiety": "anxious",
    "depression": "depressed",
    "sadness": "sad",
    "anger": "angry",
    "fear": "afraid",
    "shame": "ashamed",
    "disgust": "disgusted",
    "nervousness": "nervous",
    "guilt": "guilty",
    "jealousy": "jealous",
    "pain": "hurt",
}

#: ESConv emotions that are near-synonyms as the options word them ("anxious" / "afraid" /
#: "nervous", "sad" / "depressed" / "hurt", "ashamed" / "guilty"): a value is never a distractor
#: of a gold in its group, and one item never offers two values of a group.
EMOTION_NEAR_SYNONYMS: tuple[frozenset[str], ...] = (
    frozenset({"anxiety", "fear", "nervousness"}),
    frozenset({"depression", "sadness", "pain"}),
    frozenset({"shame", "guilt"}),
)


def _synonym_families(groups: Iterable[frozenset[str]]) -> dict[str, str]:
    """value -> the group's first value in alphabetical order (its family name)."""
    return {value: min(group) for group in groups for value in group}


def near_synonyms(first: str, second: str) -> bool:
    """Whether two ESConv emotion values are near-synonyms (:data:`EMOTION_NEAR_SYNONYMS`)."""
    return first == second or any({first, second} <= group for group in EMOTION_NEAR_SYNONYMS)


SCHEMES: tuple[LabelScheme, ...] = (
    LabelScheme(
        name="annomi_talk_type",
        domain=Domain.MI,
        attribute=Attribute.DESIRE,
        label_field="client_talk_type",
        question="Which statement best describes the client's stance toward change in their "
        "last statement of this conversation?",
        statements={
            "change": "The client is voicing reasons, desire or commitment to change "
            "(about {topic}).",
            "neutral": "The client is neither arguing for nor against change (about {topic}).",
            "sustain": "The client is voicing reasons to keep things as they are (about {topic}).",
        },
        find=_annomi_talk_type,
        utterance_values=_annomi_values,
    ),
    LabelScheme(
        name="esconv_emotion_type",
        domain=Domain.ESC,
        attribute=Attribute.EMOTION,
        label_field="emotion_type",
        question="Which emotion was the seeker feeling most strongly when they started this "
        "conversation?",
        statements={
            **{v: f"The seeker is feeling {adj}." for v, adj in _EMOTION_ADJECTIVES.items()},
            "*": "The seeker is feeling {value}.",
        },
        find=_esconv_emotion,
        families=_synonym_families(EMOTION_NEAR_SYNONYMS),
        distractor_values=("anxiety", "depression", "sadness", "anger", "fear", "shame", "disgust"),
        prospective=False,
    ),
    LabelScheme(
        name="p4g_donation_reaction",
        domain=Domain.PD,
        attribute=Attribute.DESIRE,
        label_field="ee_label",
        question="How does the persuadee feel about donating, judging by their latest reaction "
        "to it in this conversation?",
        statements={
            "positive": "The persuadee feels positive about donating to the charity.",
            "neutral": "The persuadee feels neutral about donating to the charity.",
            "negative": "The persuadee feels negative about donating to the charity.",
        },
        find=_p4g_reaction,
        utterance_values=_act_values(REACTION_ACTS),
    ),
    LabelScheme(
        name="p4g_donation_decision",
        domain=Domain.PD,
        attribute=Attribute.INTENTION,
        label_field="ee_label",
        question="What is the persuadee's intention about donating at this point of the "
        "conversation?",
        statements={
            "commits": "The persuadee intends to donate to the charity.",
            "declines": "The persuadee does not intend to donate to the charity.",
            "considering": "The persuadee is considering a donation and wants to know how "
            "donating works.",
        },
        find=_p4g_decision,
        check=_check_decision,
        utterance_values=_act_values(DECISION_ACTS),
    ),
    LabelScheme(
        name="p4g_intended_donation",
        domain=Domain.PD,
        attribute=Attribute.INTENTION,
        label_field="intended_donation",
        question="How much of their task payment does the persuadee intend to donate, going by "
        "this conversation?",
        statements={
            "nothing": "The persuadee intends to donate nothing.",
            "small": "The persuadee intends to donate a small amount, up to $0.50.",
            "moderate": "The persuadee intends to donate more than $0.50 but less than $2.",
            "all": "The persuadee intends to donate $2 or more.",
        },
        find=_p4g_intended,
        check=_check_intended,
        prospective=False,
    ),
)


class AnswerClasses(NamedTuple):
    """The label values a retrospective template item's gold and options state."""

    gold: str
    options: tuple[str, ...]  # in stored option order


def answer_classes(item: ToMItem) -> AnswerClasses | None:
    """The label value of the gold and of every option (None for other than retrospective
    template items). What the majority-answer baseline is computed on."""
    if item.provenance.source is not Source.TEMPLATE or item.task is not Task.RETROSPECTIVE:
        return None
    scheme = _SCHEMES_BY_NAME.get(item.id.rsplit(":", 1)[-1])
    if scheme is None:
        return None
    options = tuple(statement_value(scheme, option) for option in item.options)
    return AnswerClasses(gold=options[item.gold_index], options=options)


def statement_value(scheme: LabelScheme, text: str) -> str:
    """The value whose statement ``text`` is (any topic); ``text`` itself when none is."""
    for value, template in scheme.statements.items():
        pattern = re.escape(template).replace(re.escape("{topic}"), ".*")
        if value != "*" and re.fullmatch(pattern, text):
            return value
    return text  # a value stated by the "*" template


def schemes_for(domain: Domain) -> list[LabelScheme]:
    """The label schemes of one domain."""
    return [s for s in SCHEMES if s.domain is domain]


_SCHEMES_BY_NAME = {s.name: s for s in SCHEMES}


# -- building items ------------------------------------------------------------


def _distractor_values(scheme: LabelScheme, gold: str, rng: random.Random) -> list[str]:
    """Other values, one per family, none from the gold's family; at most max_options - 1."""
    pool = list(scheme.distractor_values or scheme.statements)
    by_family: dict[str, list[str]] = {}
    for value in pool:
        if value != "*" and scheme.family(value) != scheme.family(gold):
            by_family.setdefault(scheme.family(value), []).append(value)
    families = sorted(by_family)
    if len(families) > scheme.max_options - 1:
        families = rng.sample(families, scheme.max_options - 1)
    return [rng.choice(by_family[f]) for f in families]


def _item_id(context_id: str, task: Task, scheme: LabelScheme) -> str:
    short = "retro" if task is Task.RETROSPECTIVE else "prosp"
    return f"tpl:{context_id}:{short}:{scheme.name}"


def _provenance(context: Context, scheme: LabelScheme, gold: Gold, seed: int) -> Provenance:
    return Provenance(
        source=Source.TEMPLATE,
        corpus=context.corpus,
        dialogue_id=context.dialogue.id,
        window_id=context.id,
        window_index=context.index,
        label_field=scheme.label_field,
        label_value=gold.raw,
        seed=seed,
    )


def retrospective_item(
    context: Context, scheme: LabelScheme, gold: Gold, seed: int = DEFAULT_SEED
) -> ToMItem:
    """The retrospective template item of ``scheme`` for one context."""
    item_id = _item_id(context.id, Task.RETROSPECTIVE, scheme)
    rng = random.Random(f"{seed}:{item_id}")
    distractors = _distractor_values(scheme, gold.value, rng)
    values = [gold.value, *distractors]
    rng.shuffle(values)
    options = [scheme.statement(v, context) for v in values]
    rationales = {
        scheme.statement(v, context): template_rationale(scheme.label_field, v, gold.value)
        for v in distractors
    }
    return ToMItem(
        id=item_id,
        task=Task.RETROSPECTIVE,
        variant=Variant.BASE,
        domain=context.domain,
        attribute=scheme.attribute,
        initiator=context.initiator,
        recipient=context.recipient,
        context=context.lines(),
        earlier=context.earlier_lines(),
        history_turns=None,
        question=scheme.question,
        options=options,
        gold=scheme.statement(gold.value, context),
        rationales=rationales,
        provenance=_provenance(context, scheme, gold, seed),
    )


def template_profile(scheme: LabelScheme, gold: Gold, context: Context) -> str:
    """The label-derived profile shown by a prospective template item."""
    return f"{scheme.attribute.value.capitalize()}: {scheme.statement(gold.value, context)}"


PROSPECTIVE_QUESTION = (
    "Which continuation of the conversation is most consistent with this profile?"
)


def opening_values(context: Context, scheme: LabelScheme) -> list[str]:
    """The label values of the recipient's utterances shown in the opening after ``context``."""
    lines = context.opening()
    if lines is None or context.following is None or scheme.utterance_values is None:
        return []
    shown = continuation_text(lines)
    values: list[str] = []
    for utterance in context.following:
        head = " ".join(utterance.text.split()[:6])
        if utterance.role is Role.USER and head and head in shown:
            values.extend(scheme.utterance_values(utterance))
    return values


def consistency(values: Sequence[str], profile_value: str) -> float:
    """Share of the labelled recipient utterances of an option that carry the profile's value
    (0 for an option without labelled recipient utterances)."""
    return values.count(profile_value) / len(values) if values else 0.0


def prospective_items(
    session: Sequence[Context],
    scheme: LabelScheme,
    golds: Sequence[Gold | None],
    seed: int = DEFAULT_SEED,
    report: Counter[str] | None = None,
) -> list[ToMItem]:
    """Prospective template items of one session (see the module docstring).

    An item is kept only when, by the corpus's own labels on the recipient's utterances in each
    option (:func:`opening_values`), its gold is strictly more consistent with the profile than
    every distractor; the others are counted in ``report``.
    """
    openings = [c.opening() for c in session]
    texts = [continuation_text(o) if o else None for o in openings]
    values = [opening_values(c, scheme) for c in session]
    items: list[ToMItem] = []
    for i, context in enumerate(session):
        gold, gold_text = golds[i], texts[i]
        if gold is None or gold_text is None:
            continue
        distractors = _contrast_openings(i, gold.value, golds, texts)
        if not distractors:
            continue
        if scheme.utterance_values is not None:
            gold_score = consistency(values[i], gold.value)
            if any(consistency(values[j], gold.value) >= gold_score for _, _, j in distractors):
                if report is not None:
                    report[f"{scheme.name}: {DROP_NOT_MOST_CONSISTENT}"] += 1
                continue
        item_id = _item_id(context.id, Task.PROSPECTIVE, scheme)
        options = [gold_text, *(text for _, text, _ in distractors)]
        random.Random(f"{seed}:{item_id}").shuffle(options)
        rationales = {
            text: template_rationale(scheme.label_field, value, gold.value)
            for value, text, _ in distractors
        }
        items.append(
            ToMItem(
                id=item_id,
                task=Task.PROSPECTIVE,
                variant=Variant.BASE,
                domain=context.domain,
                attribute=scheme.attribute,
                initiator=context.initiator,
                recipient=context.recipient,
                context=context.lines(),
                history_turns=0,
                profile=template_profile(scheme, gold, context),
                question=PROSPECTIVE_QUESTION,
                options=options,
                gold=gold_text,
                rationales=rationales,
                provenance=_provenance(context, scheme, gold, seed),
            )
        )
    return items


def _contrast_openings(
    i: int, value: str, golds: Sequence[Gold | None], texts: Sequence[str | None]
) -> list[tuple[str, str, int]]:
    """Per other label value, (value, the opening after a window ending in it nearest in
    length, that window's position)."""
    target = word_count(texts[i] or "")
    best: dict[str, tuple[int, int, str, int]] = {}
    for j, (other, text) in enumerate(zip(golds, texts, strict=True)):
        if j == i or other is None or text is None or other.value == value:
            continue
        rank = (abs(word_count(text) - target), abs(j - i), text, j)
        if other.value not in best or rank < best[other.value]:
            best[other.value] = rank
    chosen: list[tuple[str, str, int]] = []
    seen = {option_key(texts[i] or "")}
    for other_value, (_, _, text, j) in sorted(best.items()):
        if option_key(text) not in seen:
            chosen.append((other_value, text, j))
            seen.add(option_key(text))
    return chosen


def build_template_items(
    contexts: Sequence[Context],
    *,
    tasks: Iterable[Task] = (Task.RETROSPECTIVE, Task.PROSPECTIVE),
    seed: int = DEFAULT_SEED,
    annomi_votes: Mapping[UtteranceKey, UtteranceVotes] | None = None,
    report: Counter[str] | None = None,
) -> list[ToMItem]:
    """Every template item of ``contexts`` (several sessions, in window order).

    Args:
        contexts: Contexts from :func:`cogwm.tom.contexts.contexts_of`.
        tasks: Which tasks to build.
        seed: Seed of the distractor choices and option orders.
        annomi_votes: AnnoMI's per-annotator votes (:func:`cogwm.corpora.annomi.annotators.load`):
            a gold from an utterance the annotators split on evenly is dropped.
        report: Counts of resolved golds and dropped items by reason (filled in).
    """
    wanted = set(tasks)
    counts: Counter[str] = report if report is not None else Counter()
    items: list[ToMItem] = []
    for session in _sessions(contexts):
        for scheme in schemes_for(session[0].domain):
            golds = _session_golds(session, scheme, annomi_votes, counts)
            if Task.RETROSPECTIVE in wanted:
                items.extend(
                    retrospective_item(c, scheme, g, seed)
                    for c, g in zip(session, golds, strict=True)
                    if g is not None
                )
            if Task.PROSPECTIVE in wanted and scheme.prospective:
                items.extend(prospective_items(session, scheme, golds, seed, counts))
    return items


def _session_golds(
    session: Sequence[Context],
    scheme: LabelScheme,
    votes: Mapping[UtteranceKey, UtteranceVotes] | None,
    report: Counter[str],
) -> list[Gold | None]:
    golds = [scheme.find(c) for c in session]
    if scheme.name == "p4g_intended_donation":  # one value a session, on one window
        keep = intended_donation_window(session)
        golds = [g if k == keep else None for k, g in enumerate(golds)]
    checked: list[Gold | None] = []
    for context, gold in zip(session, golds, strict=True):
        if gold is not None and votes is not None and _tied(context, gold, votes):
            report[f"{scheme.name}: {DROP_ANNOMI_TIE}"] += 1
            gold = None
        if gold is not None and scheme.check is not None:
            result = scheme.check(context, gold)
            if isinstance(result, str):
                report[f"{scheme.name}: {result}"] += 1
                gold = None
            else:
                if result != gold:
                    report[f"{scheme.name}: {RESOLVED_CONSIDERING}"] += 1
                gold = result
        checked.append(gold)
    return checked


def _tied(context: Context, gold: Gold, votes: Mapping[UtteranceKey, UtteranceVotes]) -> bool:
    meta = context.dialogue.meta
    if gold.utterance_id is None or not isinstance(meta, AnnoMIMeta):
        return False
    vote = votes.get(UtteranceKey(meta.transcript_id, gold.utterance_id))
    return vote is not None and vote.tied


def _sessions(contexts: Sequence[Context]) -> list[list[Context]]:
    sessions: dict[str, list[Context]] = {}
    for context in contexts:
        sessions.setdefault(context.dialogue.id, []).append(context)
    return [sorted(s, key=lambda c: c.index) for s in sessions.values()]
