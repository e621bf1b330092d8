"""Tiny synthetic DailyDialog and AnnoMI folders for the ``cogwm validate`` tests."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any


def _dd_dialogue(split: str, line: int, turns: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "dataset": "dailydialog",
        "data_split": split,
        "dialogue_id": f"dailydialog-{split}-{line}",
        "original_id": f"{split}-{line}",
        "domains": ["Ordinary Life"],
        "turns": [
            {
                "speaker": "user" if i % 2 == 0 else "system",
                "utterance": text,
                "utt_idx": i,
                "dialogue_acts": {
                    "binary": [{"intent": "inform", "domain": "", "slot": ""}],
                    "categorical": [],
                    "non-categorical": [],
                },
                "emotion": emotion,
            }
            for i, (text, emotion) in enumerate(turns)
        ],
    }


DD_DIALOGUES = [
    _dd_dialogue("train", 0, [("Hello, I am sad!", "sadness"), ("Why is that?", "no emotion")]),
    _dd_dialogue("validation", 0, [("Hi.", "no emotion"), ("Hello.", "no emotion")]),
    _dd_dialogue(
        "test",
        0,
        [
            ("I am so angry about this!", "anger"),
            ("Calm down.", "no emotion"),
            ("I feel glad now.", "happiness"),
            ("That smells disgusting.", "disgust"),
        ],
    ),
    _dd_dialogue(
        "test",
        1,
        [
            ("I am sad today.", "sadness"),
            ("I am scared of that dog.", "fear"),
            ("Let's go out, I am glad.", "happiness"),
            ("Wow, really?", "surprise"),
        ],
    ),
    _dd_dialogue(
        "test",
        2,
        [("This is awful, I hate it.", "anger"), ("What a nice day.", "happiness")],
    ),
    # Sadness said without the keyword: the scripted simulator misreads it.
    _dd_dialogue("test", 3, [("Hello! My cat died.", "sadness"), ("Oh no", "no emotion")]),
]

ANNOMI_HEADER = [
    "transcript_id", "mi_quality", "video_title", "video_url", "topic", "utterance_id",
    "interlocutor", "timestamp", "utterance_text", "main_therapist_behaviour", "client_talk_type",
]  # fmt: skip
ANNOMI_FULL_HEADER = [
    "transcript_id", "utterance_id", "interlocutor", "utterance_text", "annotator_id",
    "main_therapist_behaviour", "client_talk_type",
]  # fmt: skip
ANNOMI_ROWS = [
    # transcript, utterance id, speaker, text, talk type. Transcripts 1 and 16 fall in the
    # samples' seeded test split (seed 0), transcript 0 in train: its turns are never items.
    (0, 0, "therapist", "Why are you here?", "n/a"),
    (0, 1, "client", "I want to stop now.", "change"),
    (1, 0, "therapist", "Shall we talk about drinking?", "n/a"),
    (1, 1, "client", "Maybe I could cut down.", "change"),
    (1, 2, "therapist", "And?", "n/a"),
    (1, 3, "client", "I like drinking too much.", "sustain"),
    (1, 4, "therapist", "Anything else?", "n/a"),
    # Labelled change, but the annotators of the full file tie on it: never an item.
    (1, 5, "client", "I don't know, I like it.", "change"),
    (16, 0, "therapist", "How do you feel about smoking?", "n/a"),
    (16, 1, "client", "I want to change, I will quit.", "change"),
    (16, 2, "therapist", "What stops you?", "n/a"),
    (16, 3, "client", "I don't see a problem.", "sustain"),
    (16, 4, "therapist", "Tell me more.", "n/a"),
    (16, 5, "client", "Okay.", "neutral"),
]

#: A transcript of low MI quality, for the known-groups check (high against low quality). Only
#: the checks' corpora mark it: the AnnoMI quality hold-out goes to the test split, so marking it
#: everywhere would change the test split the card's hand-counted figures are made on.
LOW_QUALITY = frozenset({16})


def write_corpora(root: Path, low_quality: frozenset[int] = frozenset()) -> Path:
    """Write the corpora under ``root`` (one folder per corpus) and return ``root``;
    ``low_quality``: AnnoMI transcripts rated low quality (the rest are high)."""
    unified = root / "dailydialog" / "convlab3_unified" / "data"
    unified.mkdir(parents=True)
    (unified / "dialogues.json").write_text(json.dumps(DD_DIALOGUES), encoding="utf-8")
    annomi = root / "annomi"
    annomi.mkdir()
    with (annomi / "AnnoMI-simple.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(ANNOMI_HEADER)
        for tid, uid, who, text, talk in ANNOMI_ROWS:
            behaviour = "question" if who == "therapist" else "n/a"
            video = (f"Video {tid}", f"https://example.org/{tid}", "smoking cessation")
            quality = "low" if tid in low_quality else "high"
            writer.writerow([tid, quality, *video, uid, who, "00:00:01", text, behaviour, talk])
    with (annomi / "AnnoMI-full.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(ANNOMI_FULL_HEADER)
        for tid, uid, who, text, talk in ANNOMI_ROWS:
            behaviour = "question" if who == "therapist" else "n/a"
            # The last client utterance: 2 annotators say change, 2 sustain (a tie).
            votes = ["change", "change", "sustain", "sustain"] if (tid, uid) == (1, 5) else [talk]
            for annotator, vote in enumerate(votes):
                writer.writerow([tid, uid, who, text, annotator, behaviour, vote])
    return root
