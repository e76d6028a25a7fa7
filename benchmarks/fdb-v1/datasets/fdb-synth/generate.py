#!/usr/bin/env python3
"""Writes the fdb-synth scripts: Full-Duplex-Bench v1.0's subsets at the official sizes, as
"fdb-script/2" text scripts that `tts-synth` synthesizes.

Every text comes from the phrase banks and templates below, written for this project (everyday
topics, no real people). A fixed seed per subset makes the output the same on every run:

    python benchmarks/fdb-v1/datasets/fdb-synth/generate.py           # (re)write the <subset>.json files here
    python benchmarks/fdb-v1/datasets/fdb-synth/generate.py --check   # exit 1 when a committed file differs

Standard library only, so it runs with any Python 3.9+.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FORMAT = "fdb-script/2"

SIZES = {
    "synthetic_pause_handling": 137,
    "conversational_pause_handling": 216,
    "conversational_turn_taking": 119,
    "synthetic_user_interruption": 200,
    "synthetic_backchannel": 55,
}
SEEDS = {name: 1000 + i for i, name in enumerate(SIZES)}

# Default voice mix (engine, voice, rate, weight). Piper is fast (RTF ~0.05) and carries most
# samples; flite is instant; kokoro (RTF ~0.5, only Japanese-trained voices are installed, used
# with English G2P) speaks about one speaker in nine, so all of fdb-synth synthesizes in well
# under 15 minutes on 2 cores.
VOICES = [
    ("piper", "joe", 0.9, 3), ("piper", "joe", 1.0, 4), ("piper", "joe", 1.15, 3),
    ("flite", "slt", 1.0, 2), ("flite", "awb", 0.95, 1.5), ("flite", "rms", 1.1, 1.5),
    ("flite", "kal16", 1.0, 1),
    ("kokoro", "jf_alpha", 1.0, 1), ("kokoro", "jm_kumo", 1.05, 1),
]

# ---------------------------------------------------------------------------------------------
# Phrase banks

THINGS = ["a gift", "a new backpack", "a cheap blender", "a pair of running shoes", "a winter coat",
          "a desk lamp", "a good umbrella", "a phone case", "a small tent", "a coffee grinder"]
PEOPLE = ["my brother", "my aunt", "my roommate", "my neighbor", "my coworker", "my niece",
          "my best friend", "my dad", "my grandmother", "my cousin"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
FOODS = ["lentil soup", "fried rice", "banana bread", "a vegetable curry", "pancakes", "roast potatoes",
         "a tomato salad", "chicken tacos", "mushroom risotto", "oatmeal cookies"]
PLACES = ["the lake", "the coast", "the mountains", "my parents' town", "the city center",
          "the national park", "the old harbor", "the countryside", "the island", "the ski resort"]
HOBBIES = ["the piano", "watercolor painting", "rock climbing", "knitting", "chess", "baking bread",
           "photography", "swimming", "gardening", "woodworking"]
CHORES = ["the laundry", "the dishes", "the gutters", "the garage", "the fridge", "the windows",
          "the closet", "the bathroom", "the lawn", "the car"]

# Requests broken off where the speaker has clearly not finished: (part before the pause, rest).
# Templates with {slots}; a third part (a second pause) is added from TAILS for some samples.
PAUSE_FRAMES = [
    ("Can you help me pick {thing} for", "{person}, something under fifty dollars?"),
    ("I need a recipe for {food} that doesn't take", "more than half an hour."),
    ("What's the best way to get to {place} if I'm", "leaving early on {day} morning?"),
    ("I've been meaning to start {hobby}, but I'm not sure", "where a beginner should begin."),
    ("How often should I clean {chore}, because mine is", "getting pretty bad?"),
    ("Could you remind me to call {person} on", "{day} about the dinner plans?"),
    ("I want to plan a trip to {place} with", "{person} sometime next month."),
    ("Is it a good idea to buy {thing} online or should I", "go to a store and try it first?"),
    ("My plan for {day} is to finish {chore} and then", "maybe cook {food} for dinner."),
    ("Can you tell me how long it takes to learn", "{hobby} well enough to enjoy it?"),
    ("I'm trying to decide whether to drive to {place} or", "take the train this time."),
    ("What should I bring when I visit {person}, because the last time", "I showed up with nothing."),
    ("Do you know a simple way to make {food} without", "using an oven?"),
    ("I keep forgetting to do {chore} until", "the very last minute."),
    ("Can you suggest a weekend schedule that leaves time for", "{hobby} and a bit of rest?"),
    ("I'd like to surprise {person} with", "{thing} but I have no idea which one to get."),
    ("How much should I budget for a weekend at {place} if", "we stay two nights?"),
    ("When is the best time of year to visit", "{place} without the crowds?"),
    ("Could you explain how to keep {food} fresh for", "a few days in the fridge?"),
    ("I was wondering if {hobby} is something I could", "practice at home in the evenings."),
    ("Help me write a short note to {person} saying", "thank you for the help last {day}."),
    ("What's a polite way to ask {person} to", "return the money I lent them?"),
    ("I think I need {thing}, but before I buy one I want to", "compare a few options."),
    ("Is {food} a good thing to bring to", "a picnic on a hot day?"),
]
TAILS = [("and also", "what I should avoid doing."), ("and maybe", "a few tips for next time."),
         ("and if possible", "something that works on a small budget."),
         ("and whether", "it's worth the extra effort.")]
OPENERS = ["", "", "", "Hey, ", "Okay, so ", "Hi. ", "Quick question. ", "So, "]

# Conversational style: fillers and disfluencies are plain text.
FILLERS = ["um", "uh", "you know", "like", "I mean", "well", "so"]
OTHER_QUESTIONS = [
    "So how was your weekend?", "What have you been up to lately?", "Did you end up going on that trip?",
    "How was your week?", "What did you do for the holidays?", "How was your day off?",
    "So what happened on {day}?", "How was the long weekend?", "Did you do anything fun lately?",
    "How did the visit go?", "What did you get up to yesterday?", "How was the trip in the end?",
]
ANSWER_STARTS = [
    "Oh, it was {adj}, actually. We went to {place} and", "Honestly, {filler}, it was {adj}. On {day}",
    "Well, {filler}, I was busy with {chore}, and then", "It was {adj}, I think. Last {day}",
    "Yeah, so, we- we finally went to {place}, and", "Pretty {adj}. On {day} afternoon",
    "Oh, {filler}, I tried {hobby} for a bit, but then", "Not bad. {person} came over and then",
    "Um, it was, uh, {adj}. After work on {day}", "I- I mean, it was {adj}. My cousin visited and",
]
ANSWER_MIDDLES = ["stayed longer than we planned", "spent most of the afternoon on {hobby}",
                  "ended up cooking {food} together", "talked about moving to {place}",
                  "finally dealt with {chore}", "looked at {thing} for like an hour",
                  "made a list of everything we still need", "got completely lost on the way back"]
ANSWER_ENDS = ["so that was nice.", "which I did not expect at all.", "and now I'm kind of tired.",
               "but I'd do it again.", "so we'll see how it goes.", "and that's pretty much it.",
               "which was a lot more fun than it sounds.", "so I'm glad we went."]
ADJECTIVES = ["good", "busy", "pretty relaxing", "kind of hectic", "great", "a bit strange", "fine"]

# Conversational turn-taking: (the other speaker's question, the user's answer in one or two parts).
TURN_PAIRS = [
    ("Did you watch anything good lately?", ["Um, yeah, a show about {hobby}.", "It's slow but I like it."]),
    ("How did the interview go?", ["Oh, it went well, actually.", "They said they'll call me back next week."]),
    ("Where do you want to eat tonight?", ["Hmm, maybe the place near {place}?", "I heard the food there is good."]),
    ("Are you coming to the party on {day}?", ["I'm, uh, not really sure yet.", "I'll let you know by tomorrow."]),
    ("What are you reading right now?", ["Well, {filler}, a book about {hobby}.", "A friend lent it to me."]),
    ("How's {person} doing?", ["Oh, they're doing great.", "They just got back from {place}."]),
    ("Did you finish {chore}?", ["No, not yet.", "I was going to do it tomorrow morning."]),
    ("Want to try {hobby} with me sometime?", ["Sure, that sounds fun.", "Just tell me when."]),
    ("What time does your train leave?", ["I think it leaves at ten, or, um, ten fifteen.", "I'll double check."]),
    ("What should we bring to {place}?",
     ["Honestly, {filler}, just {food} and some drinks.", "That should be enough."]),
    ("Did the package arrive?", ["It came yesterday, finally.", "The box was completely crushed though."]),
    ("Did you like the movie?", ["So, um, I- I really liked it.", "The ending was a little weird."]),
    ("What are you making for dinner?", ["Probably {food}.", "It's the only thing I know how to cook."]),
    ("Can you help me move on {day}?", ["Yeah, I think so.", "I'm free after lunch."]),
    ("How was the drive back from {place}?", ["Long, really long.", "There was traffic the whole way."]),
    ("Do you still need {thing}?", ["Um, no, I- I found one already.", "Thanks for asking though."]),
    ("What did you end up buying for {person}?", ["I got them {thing}.", "I hope they like it."]),
    ("How's the new apartment?", ["It's, uh, it's pretty nice.", "The kitchen is tiny, but that's okay."]),
]
INTERRUPT_CONTEXTS = [
    "Can you give me a few ideas for {food} this week?", "How do I get started with {hobby}?",
    "What should I pack for a weekend at {place}?", "Tell me how to clean {chore} properly.",
    "Could you recommend {thing} for {person}?", "What's a good routine for a busy {day}?",
    "How do I make {food} taste less bland?", "What are some cheap things to do at {place}?",
    "Explain how to save money on groceries.", "What should I say when I call {person} tonight?",
    "How do I stop procrastinating on {chore}?", "Can you help me plan a quiet evening at home?",
]
INTERRUPT_TURNS = [
    "Actually, wait. I only have about ten minutes.", "Sorry, hold on. Can you make it shorter?",
    "Wait, I forgot to say it's for {person}.", "Hang on, I already tried that.",
    "Sorry, can we switch to {hobby} instead?", "Hold on, what about {food}?",
    "Actually, never mind. Let's talk about {place}.", "Wait, wait. I don't have much money.",
    "Sorry to cut in, but it has to be done by {day}.", "Hmm, hold on, is there an easier way?",
    "Stop, stop. Just give me the first step.", "Actually, can you say that again more slowly?",
]

STORY_OPENINGS = [
    "So something funny happened to me on {day}.", "Let me tell you about my weekend at {place}.",
    "I finally started {hobby} last month.", "You won't believe what happened with {chore}.",
    "My plan was to cook {food} for {person} last night.", "I went shopping for {thing} yesterday.",
    "I've been thinking about moving closer to {place}.", "{person} called me out of nowhere last week.",
]
STORY_SENTENCES = [
    "At first everything seemed totally normal.", "I left the house a little later than I wanted to.",
    "The weather was much colder than the forecast said.", "I had written a list, but I left it on the table.",
    "There was a long line, so I waited for almost twenty minutes.", "Then I realized I had forgotten my wallet.",
    "A woman next to me started chatting about her dog.", "I tried to follow the instructions step by step.",
    "Of course, the first attempt did not work at all.", "So I called {person} to ask for advice.",
    "They laughed and told me to start over from the beginning.", "The second time went a lot better.",
    "By then it was already getting dark outside.", "I grabbed something to eat on the way home.",
    "When I got back, the whole kitchen was a mess.", "It took me an hour to clean everything up.",
    "I was exhausted, but also kind of proud of myself.", "The next morning I noticed something odd.",
    "The neighbors had left a note on my door.", "It turned out they had the same problem last year.",
    "We ended up talking for a long time.", "They gave me a few tips about {hobby}.",
    "I never thought I'd enjoy that so much.", "Anyway, I want to try again next {day}.",
    "Maybe I'll bring {person} along this time.", "I think I learned a lot from the whole thing.",
    "The funny part is that nobody else even noticed.", "I still have the receipt somewhere.",
]
STORY_SPLITS = [("and the whole time I was thinking", "about {food}."),
                ("but then, out of nowhere,", "the power went out."),
                ("which meant that I had to", "walk all the way back."),
                ("and I kept telling myself", "it would be fine.")]


def fill(rng: random.Random, text: str, cap: bool = True) -> str:
    """The template with each {slot} drawn from its bank; cap: capitalise the first letter."""
    banks = {"thing": THINGS, "person": PEOPLE, "day": DAYS, "food": FOODS, "place": PLACES,
             "hobby": HOBBIES, "chore": CHORES, "filler": FILLERS, "adj": ADJECTIVES}
    out = text
    for key, bank in banks.items():
        while "{" + key + "}" in out:
            out = out.replace("{" + key + "}", rng.choice(bank), 1)
    return out[0].upper() + out[1:] if cap else out


def after_opener(opener: str, text: str) -> str:
    """opener + text, the text's first letter lower-cased after a comma (except "I...")."""
    if not opener.endswith(", ") or text.split()[0] in ("I", "I'm", "I've", "I'd"):
        return opener + text
    return opener + text[0].lower() + text[1:]


def pause(rng: random.Random, low: float, high: float) -> float:
    """A pause length in [low, high] on a 0.05 s grid."""
    return round(rng.randint(int(low * 20), int(high * 20)) / 20, 2)


def unique(rng: random.Random, n: int, make) -> list:
    """n distinct entries from make(rng) (distinct as JSON)."""
    seen, out = set(), []
    for _ in range(n * 200):
        entry = make(rng)
        key = json.dumps(entry, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(entry)
            if len(out) == n:
                return out
    raise SystemExit(f"generate.py: could not make {n} distinct entries")


def synthetic_pause(rng: random.Random) -> dict:
    a, b = PAUSE_FRAMES[rng.randrange(len(PAUSE_FRAMES))]
    first = after_opener(rng.choice(OPENERS), fill(rng, a))
    if rng.random() < 0.3:  # two pauses: the rest ends with "and also" and a third piece follows
        more, last = rng.choice(TAILS)
        rest = fill(rng, b, cap=False).rstrip("?.") + ", " + more
        return {"speech": [first, pause(rng, 1.0, 2.0), rest, pause(rng, 1.0, 2.0), last]}
    return {"speech": [first, pause(rng, 1.0, 2.0), fill(rng, b, cap=False)]}


def conversational_pause(rng: random.Random) -> dict:
    start = fill(rng, rng.choice(ANSWER_STARTS))
    middle = fill(rng, rng.choice(ANSWER_MIDDLES), cap=False)
    speech: list = [start, pause(rng, 0.8, 2.2)]
    if rng.random() < 0.35:
        speech += [f"{rng.choice(FILLERS)}, we {middle}", pause(rng, 0.8, 2.2), rng.choice(ANSWER_ENDS)]
    else:
        speech += [f"{rng.choice(['we', 'I', 'we kind of', 'we, um,'])} {middle}, {rng.choice(ANSWER_ENDS)}"]
    return {"prelude": [{"speaker": "other", "text": fill(rng, rng.choice(OTHER_QUESTIONS)),
                         "gap_s": pause(rng, 0.3, 0.9)}],
            "speech": speech}


def conversational_turn(rng: random.Random) -> dict:
    question, answer = rng.choice(TURN_PAIRS)
    first, second = (fill(rng, t) for t in answer)
    speech: list = [first]
    if rng.random() < 0.5:  # a short hesitation inside the turn
        speech += [pause(rng, 0.2, 0.45), second]
    else:
        speech[0] = f"{first} {second}"
    return {"prelude": [{"speaker": "other", "text": fill(rng, question),
                         "gap_s": pause(rng, 0.3, 0.8)}],
            "speech": speech}


def interruption(rng: random.Random) -> dict:
    return {"context": fill(rng, rng.choice(INTERRUPT_CONTEXTS)),
            "interrupt": fill(rng, rng.choice(INTERRUPT_TURNS))}


def backchannel(rng: random.Random) -> dict:
    """A monologue of 8 to 22 sentences (roughly 25 to 95 s): a TRP after most sentences."""
    n = rng.randint(8, 22)
    sentences = [fill(rng, rng.choice(STORY_OPENINGS))]
    sentences += [fill(rng, s) for s in rng.sample(STORY_SENTENCES, min(n - 1, len(STORY_SENTENCES)))]
    items: list = []
    for i, sentence in enumerate(sentences):
        if items:  # after a finished sentence: mostly a TRP, sometimes a plain short breath
            items.append({"trp": pause(rng, 0.4, 0.9)} if rng.random() < 0.8 else pause(rng, 0.2, 0.4))
        items.append(sentence)
        if i and rng.random() < 0.25:  # then a sentence with a pause where it is clearly unfinished
            a, b = rng.choice(STORY_SPLITS)
            items += [{"trp": pause(rng, 0.4, 0.9)}, fill(rng, a), pause(rng, 0.2, 0.5), fill(rng, b, cap=False)]
    if not any(isinstance(x, dict) for x in items):
        items[1] = {"trp": 0.6}
    return {"monologue": items}


MAKERS = {
    "synthetic_pause_handling": (synthetic_pause, {"lead_s": 0.5, "trailing_s": 2.0}),
    "conversational_pause_handling": (conversational_pause, {"lead_s": 0.5, "trailing_s": 2.0}),
    "conversational_turn_taking": (conversational_turn, {"lead_s": 0.5, "trailing_s": 5.0}),
    "synthetic_user_interruption": (interruption, {"lead_s": 0.5, "gap_s": 7.0, "trailing_s": 15.0}),
    "synthetic_backchannel": (backchannel, {"lead_s": 0.5, "trailing_s": 2.0}),
}


def script(subset: str) -> dict:
    rng = random.Random(SEEDS[subset])
    make, timing = MAKERS[subset]
    return {"format": FORMAT, "subset": subset, "timing": timing, "seed": SEEDS[subset],
            "voices": [{"engine": e, "voice": v, "rate": r, "weight": w} for e, v, r, w in VOICES],
            "samples": unique(rng, SIZES[subset], make)}


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
              "run benchmarks/fdb-v1/datasets/fdb-synth/generate.py", file=sys.stderr)
        return 1
    if args.check:
        print(f"ok: {len(SIZES)} scripts match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
