"""Builders shared by the DialToM tests: hand-made dialogues, items and a small AnnoMI corpus."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import (
    AnnoMIMeta,
    AnnoMIUtteranceLabels,
    P4GSentence,
    P4GUtteranceLabels,
)
from cogwm.tom.items import (
    Domain,
    Line,
    Provenance,
    Source,
    SpeakerRole,
    Task,
    ToMItem,
)


def words(n: int, word: str = "word") -> str:
    """A text of exactly ``n`` whitespace words."""
    return " ".join([word] * n)


def annomi_dialogue(
    dialogue_id: str, rows: list[tuple[str, str, str | None]], topic: str = "smoking cessation"
) -> Dialogue:
    """An AnnoMI dialogue from (speaker, text, client talk type) rows."""
    utterances = [
        Utterance(
            index=k,
            speaker=speaker,
            role=Role.USER if speaker == "client" else Role.AGENT,
            text=text,
            labels=AnnoMIUtteranceLabels(
                utterance_id=k,
                timestamp="00:00:00",
                main_therapist_behaviour="question" if speaker == "therapist" else None,
                client_talk_type=talk,
            ),
        )
        for k, (speaker, text, talk) in enumerate(rows)
    ]
    return Dialogue(
        id=dialogue_id,
        corpus="annomi",
        utterances=utterances,
        meta=AnnoMIMeta(
            transcript_id=0, mi_quality="high", video_title="t", video_url="u", topic=topic
        ),
    )


def p4g_utterance(index: int, role: Role, text: str, acts: list[str | None]) -> Utterance:
    """A PersuasionForGood utterance with one labelled sentence per act."""
    sentences = [
        P4GSentence(text=text, ee_label_1=act if role is Role.USER else None) for act in acts
    ]
    return Utterance(
        index=index,
        speaker="persuadee" if role is Role.USER else "persuader",
        role=role,
        text=text,
        labels=P4GUtteranceLabels(turn=index // 2, sentences=sentences or None),
    )


def mc_item(
    item_id: str = "x:1#w0:retro:t",
    *,
    options: list[str] | None = None,
    gold: str = "yes",
    task: Task = Task.RETROSPECTIVE,
    domain: Domain = Domain.MI,
    dialogue_id: str = "x:1",
    **extra: object,
) -> ToMItem:
    """A valid multiple-choice item (override any field)."""
    data: dict[str, object] = {
        "id": item_id,
        "task": task,
        "domain": domain,
        "attribute": "desire" if task is Task.RETROSPECTIVE else None,
        "initiator": "Counselor",
        "recipient": "Client",
        "context": [
            Line(role=SpeakerRole.INITIATOR, speaker="Counselor", text="How are you?"),
            Line(role=SpeakerRole.RECIPIENT, speaker="Client", text="Fine."),
            Line(role=SpeakerRole.RECIPIENT, speaker="Client", text="Really fine."),
            Line(role=SpeakerRole.INITIATOR, speaker="Counselor", text="Good."),
        ],
        "history_turns": None if task is Task.RETROSPECTIVE else 0,
        "profile": None if task is Task.RETROSPECTIVE else "Desire: to change.",
        "question": "Which?",
        "options": options if options is not None else ["yes", "no", "maybe", "never"],
        "gold": gold,
        "provenance": Provenance(
            source=Source.TEMPLATE,
            corpus="annomi",
            dialogue_id=dialogue_id,
            window_id=f"{dialogue_id}#w0",
            window_index=0,
        ),
    }
    data.update(extra)
    return ToMItem.model_validate(data, strict=False)


ANNOMI_COLUMNS = (
    "transcript_id",
    "mi_quality",
    "video_title",
    "video_url",
    "topic",
    "utterance_id",
    "interlocutor",
    "timestamp",
    "utterance_text",
    "main_therapist_behaviour",
    "client_talk_type",
)


def write_annomi(folder: Path, sessions: int = 3, rounds: int = 10) -> None:
    """An AnnoMI-simple.csv whose sessions span several windows (40-word utterances).

    Every round is a therapist question and a client answer; the client's talk type cycles
    change, neutral, sustain every two rounds, shifted by one round, so that each window (two
    rounds) ends in a known label and the next window opens with a client answer of that same
    label (the prospective gold is the most profile-consistent continuation).
    """
    folder.mkdir(parents=True, exist_ok=True)
    talk = ("change", "neutral", "sustain")
    with (folder / "AnnoMI-simple.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(ANNOMI_COLUMNS)
        for t in range(sessions):
            for r in range(rounds):
                base = [t, "high", f"Video {t}", f"https://example.org/{t}", "smoking cessation"]
                question = f"Question {t}-{r} " + words(38, f"ask{t}x{r}")
                answer = f"Answer {t}-{r} " + words(38, f"say{t}x{r}")
                label = ((r + 1) // 2 + t) % 3
                writer.writerow(
                    [*base, 2 * r, "therapist", "00:00:01", question, "question", "n/a"]
                )
                writer.writerow(
                    [*base, 2 * r + 1, "client", "00:00:02", answer, "n/a", talk[label]]
                )


def tom_data_dir(target: Path, fixtures: Path) -> Path:
    """A data directory: a multi-window AnnoMI plus the shipped ESConv and P4G fixtures."""
    write_annomi(target / "annomi")
    for corpus in ("esconv", "persuasionforgood"):
        shutil.copytree(fixtures / corpus, target / corpus)
    return target


def annomi_session(dialogue_id: str = "annomi:7") -> Dialogue:
    """12 utterances of 40 words: windows w0 = u0-u3, w1 = u4-u7, w2 = u8-u11 (160 words each).

    The last *labelled* client utterance of each window: w0 u3 sustain, w1 u5 neutral (u7 has no
    label), w2 u11 change.
    """
    talk = [None, "change", None, "sustain", None, "neutral", None, None, None, "change", None,
            "change"]  # fmt: skip
    rows = [
        ("therapist" if k % 2 == 0 else "client", words(40, f"u{k}"), talk[k]) for k in range(12)
    ]
    return annomi_dialogue(dialogue_id, rows)
