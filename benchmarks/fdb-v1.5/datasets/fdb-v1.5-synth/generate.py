#!/usr/bin/env python3
"""Writes the fdb-v1.5-synth scripts: Full-Duplex-Bench v1.5's four subsets at the official sizes
(user_interruption 200, user_backchannel 99, talking_to_other 100, background_speech 100), as
"fdb-v1.5-script/1" text scripts that `tts-synth` synthesizes.

Every text comes from the phrase banks and templates below, written for this project (everyday
topics, no real people); none is taken from the official data. A fixed seed per subset makes the
output the same on every run:

    python benchmarks/fdb-v1.5/datasets/fdb-v1.5-synth/generate.py           # (re)write the <subset>.json files here
    python benchmarks/fdb-v1.5/datasets/fdb-v1.5-synth/generate.py --check   # exit 1 when a committed file differs

Standard library only, so it runs with any Python 3.9+.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FORMAT = "fdb-v1.5-script/1"

SIZES = {
    "user_interruption": 200,
    "user_backchannel": 99,
    "talking_to_other": 100,
    "background_speech": 100,
}
SEEDS = {name: 1500 + i for i, name in enumerate(SIZES)}
TRAILING_S = 8.0          # after the event: room for the model to answer, or to resume
DELAY_S = (2.0, 4.0)      # the event's start after the user's prior turn ends (the model is speaking)

# Default voice mix (engine, voice, rate, weight), as fdb-synth's: every speaker of every sample
# draws one; the other speaker (side talk, background) never gets the user's voice.
VOICES = [
    ("piper", "joe", 0.9, 3), ("piper", "joe", 1.0, 4), ("piper", "joe", 1.15, 3),
    ("flite", "slt", 1.0, 2), ("flite", "awb", 0.95, 1.5), ("flite", "rms", 1.1, 1.5),
    ("flite", "kal16", 1.0, 1),
    ("kokoro", "jf_alpha", 1.0, 1), ("kokoro", "jm_kumo", 1.05, 1),
]

# ---------------------------------------------------------------------------------------------
# Phrase banks

PROJECTS = ["growing tomatoes on a balcony", "training for a first 10k run", "saving for a used car",
            "keeping a small aquarium", "starting a book club", "painting a bedroom", "planning a camping weekend",
            "fixing a leaky faucet", "choosing a first telescope", "organizing a garage sale",
            "setting up a home office", "teaching a dog to sit"]
HOBBIES = ["baking sourdough", "playing the guitar", "running longer distances", "speaking Spanish",
           "drawing portraits", "swimming", "rock climbing", "knitting", "playing chess", "taking photos at night"]
CITIES = ["Lisbon", "Kyoto", "Vancouver", "Edinburgh", "Buenos Aires", "Prague", "Seattle", "Marrakesh",
          "Copenhagen", "Melbourne", "Montreal", "Istanbul"]
DISHES = ["a vegetable soup", "a lemon cake", "a spicy noodle dish", "a bean chili", "a fish curry",
          "a mushroom pie", "a simple omelette", "a potato salad", "a rice pudding", "a tomato pasta"]
DEVICES = ["my laptop", "my phone", "the smart TV", "my tablet", "the printer", "my watch", "the old desktop"]
GADGETS = ["laptop", "phone", "tablet", "printer", "router", "smart TV"]
SUBJECTS = ["the water cycle", "how vaccines work", "compound interest", "the French revolution",
            "how airplanes stay up", "photosynthesis", "black holes", "how a bill becomes a law",
            "the stock market", "how batteries store energy", "plate tectonics", "the immune system"]
PEOPLE = ["my sister", "my landlord", "my manager", "my uncle", "a new neighbor", "my teammate",
          "my old teacher", "my roommate"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
NUMBERS = ["two", "three", "four", "five"]
ROOMS = ["kitchen", "hallway", "living room", "garage", "bedroom", "car"]
THINGS = ["charger", "blue folder", "umbrella", "spare key", "grocery list", "receipt", "water bottle",
          "backpack"]
PETS = ["cat", "dog", "rabbit", "fish"]

# The user's prior turn, by topic family: a request the model then answers (it is speaking when
# the event comes).
CONTEXTS = {
    "travel": ["Tell me about the best neighborhoods to stay in {city}.",
               "What's the best time of year to visit {city}?", "What should I pack for three days in {city}?",
               "Could you tell me a bit about the history of {city}?"],
    "cooking": ["How do I make {dish} for four people?", "What do I need to cook {dish} on a weeknight?",
                "What's a healthy side dish to go with {dish}?"],
    "tech": ["My {gadget} keeps freezing. What should I try first?", "How do I back up everything on {device}?",
             "How can I make the battery on {device} last longer?"],
    "hobby": ["Can you give me some tips on {hobby}?", "How long does it usually take to get good at {hobby}?",
              "What mistakes do beginners make when {hobby}?", "Can you suggest a weekly routine for {hobby}?"],
    "project": ["What should I know before {project}?", "Can you walk me through {project}?",
                "What would I need to buy for {project}?"],
    "explain": ["Can you explain {subject} in simple terms?", "Give me a short overview of {subject}.",
                "Why does {subject} matter in everyday life?"],
    "social": ["How should I write a thank you note to {person}?",
               "What's a polite way to tell {person} I'm moving out?",
               "How do I ask {person} for a small favor without it being awkward?"],
    "plan": ["Help me plan a relaxing {day} at home.", "Help me plan a small birthday dinner on {day}.",
             "How should I organize my week if {day} is already full?"],
}
# A new request or a correction, in the user's voice at the normal level: one that fits the
# context's family, or one that fits any.
INTERRUPTIONS = {
    "travel": ["Sorry, I'm going in winter. Does that change anything?", "Wait, I'll be traveling with two kids.",
               "Hang on, I'm only there for one day.", "Actually, what about {city} instead?"],
    "cooking": ["Wait, I don't have an oven. What then?", "Actually, forget that. What about {dish} instead?",
                "Hold on, one of my guests is vegetarian.", "Wait, can I make it the day before?"],
    "tech": ["Wait, does that work on {device} too?", "Hang on, I already tried restarting it.",
             "Sorry, it's a pretty old model, if that matters.", "Actually, I just want to reset it completely."],
    "hobby": ["Wait, I should say I'm a complete beginner.", "Hold on, I only have about {number} minutes a day.",
              "Actually, is there a cheaper way to start?", "Sorry, I meant {hobby}, not that."],
    "project": ["Hang on, I already tried that and it didn't work.", "Wait, wait. Is there a cheaper way to do it?",
                "Actually, I'm on a really tight budget.", "Hold on, how long would all of that take?"],
    "explain": ["Stop for a second. Can you explain that last part?", "Actually, let's talk about {subject} instead.",
                "Wait, can you give me an example?", "Sorry, that's too technical. Can you make it simpler?"],
    "social": ["Sorry, I meant {person}, actually.", "Hang on, it should sound more casual.",
               "Wait, we don't really get along, if that matters.", "Actually, I'd rather send a text."],
    "plan": ["Sorry to cut in, but it has to be ready by {day}.", "Hold on, what would you do if it rains?",
             "Wait, I forgot I work in the morning.", "Actually, make it {number} people, not just me."],
    "any": ["Sorry, wait. Can you make that shorter?", "Hang on, can you just give me the first step?",
            "Sorry, can you give me a list instead?", "One second. Which of those is the easiest?",
            "Sorry, can you say that again more slowly?", "Wait, start over, I missed the beginning."],
}
# Short continuers in the user's voice, a little quieter than the user's turn.
BACKCHANNELS = ["Uh-huh.", "Right.", "Yeah.", "Mm-hmm.", "I see.", "Okay.", "Oh, really?", "Got it.",
                "Sure.", "Yeah, yeah.", "Right, right.", "Oh, okay.", "Uh-huh, okay.", "I see, yeah."]
# Someone else near the microphone, speaking to another person in the room (not to the model).
SIDE_TALK = [
    "Hang on, can you close the door? It's cold in here.", "Just put the bags on the table, thanks.",
    "Can you turn the music down a little?", "Did you already feed the {pet}?",
    "No, the {thing} is in the {room}.", "Tell them I'll call back after dinner.",
    "I'm on the phone, give me a second.", "Could you grab me a glass of water while you're up?",
    "The keys are on the hook by the door.", "Are you done with the laptop? I need it for a minute.",
    "We're leaving in {number} minutes, okay?", "Can you check if the oven is still on?",
    "Yes, I'll be right there.", "Did someone take the trash out?", "Put it in the {room} for now.",
    "I think the package came this morning.", "Don't forget your {thing}.",
    "Could you let the {pet} out, please?", "Which shoes are you wearing tonight?",
    "Can you help me with this box after lunch?",
]
# Speech from a distance (another room, down the street).
DISTANT = [
    "Has anyone seen where I left the car keys?", "Dinner's almost ready, can someone set the table?",
    "Who left the milk out again?", "Are we still going to the market later?",
    "I'll be in the {room} if anyone needs me.", "Mom, have you seen my {thing}?",
    "The game starts at seven, don't be late.", "Can somebody answer the door?",
    "We need more coffee, I'll write it down.", "It's your turn to walk the {pet}.",
    "I can't find the remote anywhere.", "The bus was late again this morning.",
]
# A radio or television in the room.
BROADCAST = [
    "And now the weather. Expect light rain this evening, clearing by the morning.",
    "Traffic on the northern bridge is moving slowly after an earlier accident.",
    "Stay tuned, there's more music right after the break.",
    "In sports tonight, the home side won {number} to one in extra time.",
    "Shares closed slightly higher today after a quiet week of trading.",
    "The city council will vote on the new bike lanes on {day}.",
    "Here's a classic from the early eighties, and then the news at the top of the hour.",
    "Tomorrow looks sunny and warm, with a light breeze from the west.",
    "A new exhibition opens at the science museum this {day}.",
    "Call in now and tell us about your favorite summer recipe.",
    "Researchers say the spring migration started about {number} days early this year.",
    "That's all for the headlines. Back to you in the studio.",
]


def fill(rng: random.Random, text: str) -> str:
    """The template with each {slot} drawn from its bank."""
    banks = {"project": PROJECTS, "hobby": HOBBIES, "city": CITIES, "dish": DISHES, "device": DEVICES,
             "gadget": GADGETS, "subject": SUBJECTS, "person": PEOPLE, "day": DAYS, "number": NUMBERS, "room": ROOMS,
             "thing": THINGS, "pet": PETS}
    out = text
    for key, bank in banks.items():
        while "{" + key + "}" in out:
            out = out.replace("{" + key + "}", rng.choice(bank), 1)
    return out


def grid(rng: random.Random, low: float, high: float, step: float) -> float:
    """A value in [low, high] on a grid of `step`."""
    k = int(round((high - low) / step))
    return round(low + step * rng.randint(0, k), 2)


def unique(rng: random.Random, n: int, make) -> list:
    """n entries from make(rng), distinct in (context, event)."""
    seen, out = set(), []
    for _ in range(n * 200):
        entry = make(rng)
        key = (entry["context"], entry["event"])
        if key not in seen:
            seen.add(key)
            out.append(entry)
            if len(out) == n:
                return out
    raise SystemExit(f"generate.py: could not make {n} distinct entries")


def shares_a_slot(a: str, b: str) -> bool:
    """Whether a slot value (a city, a dish, a person, ...) appears in both texts."""
    banks = (PROJECTS, HOBBIES, CITIES, DISHES, DEVICES, SUBJECTS, PEOPLE, DAYS)
    return any(v in a and v in b for bank in banks for v in bank)


def context(rng: random.Random) -> tuple[str, str]:
    """(family, the user's prior turn)."""
    family = rng.choice(sorted(CONTEXTS))
    return family, fill(rng, rng.choice(CONTEXTS[family]))


def entry(rng: random.Random, text: str, event: str, kind: str, speaker: str, level_db: float, **extra) -> dict:
    return {"context": text, "event": event, "kind": kind, "speaker": speaker,
            "delay_s": grid(rng, *DELAY_S, 0.05), "level_db": level_db, "trailing_s": TRAILING_S, **extra}


def interruption(rng: random.Random) -> dict:
    # the same voice at the normal level; one in three fits any context
    family, text = context(rng)
    bank = INTERRUPTIONS["any"] if rng.random() < 1 / 3 else INTERRUPTIONS[family]
    event = fill(rng, rng.choice(bank))
    while shares_a_slot(event, text):  # "I meant X" and "what about X instead?" name another X
        event = fill(rng, rng.choice(bank))
    return entry(rng, text, event, "interruption", "user", 0.0)


def backchannel(rng: random.Random) -> dict:
    # the same voice, a little quieter: -6 to -3 dB
    _, text = context(rng)
    return entry(rng, text, rng.choice(BACKCHANNELS), "backchannel", "user", grid(rng, -6.0, -3.0, 0.5))


def side_talk(rng: random.Random) -> dict:
    # another voice, away from the microphone: -10 to -4 dB
    _, text = context(rng)
    return entry(rng, text, fill(rng, rng.choice(SIDE_TALK)), "side_talk", "other", grid(rng, -10.0, -4.0, 0.5))


def background(rng: random.Random) -> dict:
    # another voice at -20 to -15 dB, low-passed: from another room (2.0-3.0 kHz) or a
    # broadcast's small loudspeaker (3.0-4.0 kHz)
    _, text = context(rng)
    if rng.random() < 0.5:
        return entry(rng, text, fill(rng, rng.choice(DISTANT)), "background", "other",
                     grid(rng, -20.0, -15.0, 0.5), lowpass_hz=grid(rng, 2000.0, 3000.0, 100.0), note="distant")
    return entry(rng, text, fill(rng, rng.choice(BROADCAST)), "background", "other",
                 grid(rng, -20.0, -15.0, 0.5), lowpass_hz=grid(rng, 3000.0, 4000.0, 100.0), note="broadcast")


MAKERS = {
    "user_interruption": interruption,
    "user_backchannel": backchannel,
    "talking_to_other": side_talk,
    "background_speech": background,
}


def script(subset: str) -> dict:
    rng = random.Random(SEEDS[subset])
    return {"format": FORMAT, "subset": subset, "timing": {"lead_s": 0.5}, "seed": SEEDS[subset],
            "voices": [{"engine": e, "voice": v, "rate": r, "weight": w} for e, v, r, w in VOICES],
            "samples": unique(rng, SIZES[subset], MAKERS[subset])}


def render(doc: dict) -> str:
    """One sample per line, so diffs stay readable."""
    head = {k: v for k, v in doc.items() if k != "samples"}
    lines = [json.dumps(head, ensure_ascii=False)[:-1] + ', "samples": [']
    lines += ["  " + json.dumps(s, ensure_ascii=False) + ("," if i + 1 < len(doc["samples"]) else "")
              for i, s in enumerate(doc["samples"])]
    return "\n".join(lines) + "\n]}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="verify the committed scripts instead of writing")
    ap.add_argument("--out", type=Path, default=HERE, help="folder to write (default: next to this file)")
    args = ap.parse_args(argv)
    stale = []
    for subset in SIZES:
        text = render(script(subset))
        path = args.out / f"{subset}.json"
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"generate.py --check: {', '.join(stale)} differ from the generator's output; "
              "run benchmarks/fdb-v1.5/datasets/fdb-v1.5-synth/generate.py", file=sys.stderr)
        return 1
    if args.check:
        print(f"ok: {len(SIZES)} scripts match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
