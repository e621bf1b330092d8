"""DialToM contexts: the sliding windows of AnnoMI, ESConv and PersuasionForGood.

A context is one window (see :mod:`cogwm.corpora.windows`) with its place in the session: the
window that follows it (whose opening is the gold of a prospective item) and whether it is the
session's last. Its id is the window id, stable across runs: ``"<dialogue id>#w<k>@200"`` under
the default bounded rule (150 to 200 words), ``"<dialogue id>#w<k>"`` under the earlier greedy
rule (``max_words=None``), so items built on different windows never share an id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cogwm import corpora
from cogwm.corpora import WindowKind, word_count
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.tom.items import CORPUS_DOMAIN, Domain, Line, SpeakerRole

#: The three DialToM corpora, in the paper's order.
DIALTOM_CORPORA: tuple[str, ...] = ("annomi", "esconv", "persuasionforgood")

#: Display names (initiator, recipient) per domain, as the paper names the roles.
ROLE_NAMES: dict[Domain, tuple[str, str]] = {
    Domain.MI: ("Counselor", "Client"),
    Domain.ESC: ("Supporter", "Seeker"),
    Domain.PD: ("Persuader", "Persuadee"),
}

#: The window rule's ceiling by default (None selects the earlier greedy rule).
DEFAULT_MAX_WORDS: int | None = corpora.LONG_WINDOW_WORDS

#: The gold continuation of a prospective item: the opening of the next window, about this long.
OPENING_WORDS = 60


@dataclass(frozen=True)
class Context:
    """One window of a session, with what follows it."""

    id: str
    corpus: str
    domain: Domain
    dialogue: Dialogue
    index: int
    utterances: list[Utterance]
    following: list[Utterance] | None  # the next window's utterances; None for the last window
    start: int = 0  # position of the window's first utterance in the session
    kind: WindowKind = WindowKind.BOUNDED  # why the window closed where it did

    def earlier_lines(self) -> list[Line]:
        """The session's lines before this window (shown with ``--history full``)."""
        return to_lines(self.dialogue.utterances[: self.start], self.domain)

    @property
    def is_last(self) -> bool:
        """Whether this is the session's last window (it has no prospective item)."""
        return self.following is None

    @property
    def initiator(self) -> str:
        """Display name of the initiator."""
        return ROLE_NAMES[self.domain][0]

    @property
    def recipient(self) -> str:
        """Display name of the recipient."""
        return ROLE_NAMES[self.domain][1]

    def lines(self) -> list[Line]:
        """The window as item lines."""
        return to_lines(self.utterances, self.domain)

    def opening(self, max_words: int = OPENING_WORDS) -> list[Line] | None:
        """The opening of the next window (see :func:`opening`); None for the last window."""
        if self.following is None:
            return None
        return opening(to_lines(self.following, self.domain), max_words)


def resolve_corpora(name: str) -> list[str]:
    """``all`` or one DialToM corpus name/alias as canonical corpus names."""
    if name == "all":
        return list(DIALTOM_CORPORA)
    canonical = corpora.get(name).name
    if canonical not in CORPUS_DOMAIN:
        raise InputError(
            f"corpus {name!r} is not a DialToM domain; choose one of "
            f"{', '.join(DIALTOM_CORPORA)} or all"
        )
    return [canonical]


def load_contexts(
    corpus_names: Sequence[str], data_dir: Path, max_words: int | None = DEFAULT_MAX_WORDS
) -> list[Context]:
    """Load the corpora and cut every session into contexts (``max_words`` as in contexts_of)."""
    found: list[Context] = []
    for name in corpus_names:
        found.extend(contexts_of(corpora.load(name, data_dir), max_words))
    return found


def contexts_of(
    dialogues: Iterable[Dialogue], max_words: int | None = DEFAULT_MAX_WORDS
) -> list[Context]:
    """The contexts of every dialogue, in order.

    Args:
        dialogues: The sessions.
        max_words: The bounded window rule's ceiling; None for the earlier greedy rule.
    """
    found: list[Context] = []
    for dialogue in dialogues:
        domain = CORPUS_DOMAIN.get(dialogue.corpus)
        if domain is None:
            raise InputError(
                f"dialogue {dialogue.id}: corpus {dialogue.corpus!r} is not in DialToM"
            )
        windows = corpora.make_windows(dialogue, max_words=max_words)
        for k, window in enumerate(windows):
            following = windows[k + 1].utterances if k + 1 < len(windows) else None
            found.append(
                Context(
                    id=window.id,
                    corpus=dialogue.corpus,
                    domain=domain,
                    dialogue=dialogue,
                    index=window.index,
                    utterances=window.utterances,
                    following=following,
                    start=window.start,
                    kind=window.kind,
                )
            )
    return found


def to_lines(utterances: Iterable[Utterance], domain: Domain) -> list[Line]:
    """Utterances as item lines with the domain's display names."""
    initiator, recipient = ROLE_NAMES[domain]
    return [
        Line(role=SpeakerRole.RECIPIENT, speaker=recipient, text=u.text.strip())
        if u.role is Role.USER
        else Line(role=SpeakerRole.INITIATOR, speaker=initiator, text=u.text.strip())
        for u in utterances
    ]


def _take_words(lines: Sequence[Line], budget: int) -> list[Line]:
    """Lines in order until ``budget`` words are used; the last one cut with an ellipsis."""
    taken: list[Line] = []
    for line in lines:
        if budget <= 0:
            break
        words = line.text.split()
        if len(words) > budget:
            taken.append(line.model_copy(update={"text": " ".join(words[:budget]) + " …"}))
            break
        taken.append(line)
        budget -= len(words)
    return taken


def _tail_words(lines: Sequence[Line], budget: int) -> list[Line]:
    """The last ``budget`` words of ``lines``, the first kept line cut from its front."""
    kept: list[Line] = []
    for line in reversed(lines):
        if budget <= 0:
            break
        words = line.text.split()
        if len(words) > budget:
            kept.append(line.model_copy(update={"text": "… " + " ".join(words[-budget:])}))
            break
        kept.append(line)
        budget -= len(words)
    return list(reversed(kept))


def opening(lines: Sequence[Line], max_words: int = OPENING_WORDS) -> list[Line]:
    """The first utterances of a window, about ``max_words`` words, always with the recipient.

    Lines are taken in order until the budget is spent (the last one cut with "…"). When the
    recipient would not speak within the budget, the initiator's lines before the recipient's
    first line are cut to half the budget (kept from their end) so that the continuation shows
    the recipient's behaviour, which is what a profile can predict.
    """
    taken = _take_words(lines, max_words)
    first_recipient = next(
        (k for k, line in enumerate(lines) if line.role is SpeakerRole.RECIPIENT), None
    )
    if first_recipient is None or any(line.role is SpeakerRole.RECIPIENT for line in taken):
        return taken
    lead = _tail_words(lines[:first_recipient], max_words // 2)
    used = sum(word_count(line.text) for line in lead)
    return lead + _take_words(lines[first_recipient:], max_words - used)


def continuation_text(lines: Sequence[Line]) -> str:
    """A continuation as one option text (``Speaker: text`` lines)."""
    return "\n".join(f"{line.speaker}: {line.text}" for line in lines)
