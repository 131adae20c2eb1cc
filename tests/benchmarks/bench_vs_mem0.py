"""``make bench-vs-mem0``: MemoryHub over loopback HTTP against mem0's library in-process.

The same workload, on the same machine, against three systems:
- MemoryHub as ``make run`` serves it in production (gunicorn with deploy/gunicorn.conf.py,
  DEBUG off, psycopg pool, Redis broker; the API rate limit off, one key drives the load):
  an add is the memory tool's ``create`` of a note, one per turn (``turn_id``), a search is
  ``POST .../recall`` with ``limit`` 10 and the defaults (documents and facts; threshold
  0.15), both from a bare-socket keep-alive client (bench_api's);
- mem0 (``mem0ai`` 2.2.1, ``Memory`` in-process, ``add(..., infer=False)``,
  ``search(..., filters={"user_id": ...}, top_k=10)`` with its defaults) on its default store,
  qdrant-client's local on-disk mode, and on pgvector, in a database of its own on
  MemoryHub's embedded PostgreSQL (mem0's defaults: an HNSW index, full text on the side).
  mem0 runs in a virtual environment of its own (``var/bench-mem0-venv``, made on the first
  run), one process per store: tests/benchmarks/mem0_side.py.

Every side embeds with MemoryHub's 384-d ``hashing`` provider: mem0 through its
``langchain`` embedder provider (the provider's own file, loaded without Django), and the run
checks that a probe text gets the same vector from both.

The data (seeded): ``--users`` people of ``--memories`` dialogue turns each (about 100 bytes;
user and assistant turns) about 18 subjects of a life (pet, home, work, allergy...): one
turn per subject states the fact, five more touch the subject without answering, the rest
is chat. ``--queries`` questions (10 a person) each ask for one person's fact in other
words; that turn is the question's evidence, and evidence recall@10 is the share of
questions whose evidence comes back among the 10 results.

Three rounds, the systems in a rotating order each round:
1. adds: each round, each system adds the turns of a third of the people, one at a time from
   one sequential client: adds/s and add p50/p95 (no worker runs meanwhile: the embedding a
   write enqueues is a separate service's CPU, as in ``make bench``);
2. then a real Celery worker embeds MemoryHub's passages (the time is printed, not
   compared), and both databases are ANALYZEd, as autovacuum would after a bulk load;
3. searches: each round, each system answers a third of the questions from one client
   (search p50/p95, recall@10), then the same questions from ``--clients`` clients for
   ``--seconds`` (MemoryHub: processes over HTTP; mem0: threads sharing its ``Memory``, as a
   web app's would): searches/s.
Printed: the machine's speed gauge, each round's figures, then the medians of the rounds
(recall@10 over every question) and the ratios MemoryHub / each mem0 column. Besides the
latencies, the CPU an add and a search cost over every process they run in (from /proc: the
client, gunicorn and the database cluster for MemoryHub; mem0's process and the cluster),
which a busy shared machine distorts far less than it does latency.

    python -m tests.benchmarks.bench_vs_mem0 [--quick] [--users 100] [--memories 200]
        [--queries 1000] [--clients 4] [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from tests.benchmarks.bench_api import Client
from tests.benchmarks.bench_recall import setup_django
from tests.benchmarks.benchserver import (
    ROOT,
    bench_env,
    free_port,
    machine_speed,
    manage,
    one_each_at_least,
    percentile,
    purge_queue,
    run_clients,
    server_cpu_seconds,
    serving,
    start_worker,
)
from tests.benchmarks.mem0_side import PROBE

DB_NAME = "bench_vs_mem0"
MEM0_DB_NAME = "bench_vs_mem0_pgvector"
MEM0_VENV = ROOT / "var" / "bench-mem0-venv"
# What mem0's Memory needs for these two stores and the langchain embedder (mem0ai's
# "extras" would bring sentence-transformers and more), pinned so runs compare.
MEM0_PACKAGES = (
    "mem0ai==2.2.1", "qdrant-client==1.20.0", "psycopg[binary,pool]==3.3.9",
    "langchain==0.3.30", "langchain-core==0.3.86", "langchain-community==0.3.31",
)
SYSTEMS = ("memoryhub", "qdrant", "pgvector")
TITLES = {"memoryhub": "MemoryHub (HTTP)", "qdrant": "mem0 + local Qdrant",
          "pgvector": "mem0 + pgvector"}
LIMIT = 10
WARM_USER, WARM_TURNS = "warm-up", 20

# --- the data --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    fact: str  # the turn that answers the questions
    questions: tuple[str, ...]
    # Turns on the same subject that do not answer it: the words a question shares with its
    # evidence, in other sentences. "A: " marks the assistant's.
    near: tuple[str, ...]


SUBJECTS = (
    Subject("My {pet} is called {pet_name}; {pet_name} is {age} years old and still loves "
            "chasing things in the park.",
            ("What is my {pet}'s name?", "What did I name my {pet}?", "How old is my {pet}?"),
            ("Can you remind me to buy food for the {pet} before {weekday}?",
             "The neighbour's {pet} kept making noise during my call this morning, it was so "
             "distracting.",
             "A: How is your {pet} getting on with the new routine since you started working "
             "from home?",
             "I need to find someone to look after the {pet} while I'm away in {month}.",
             "A: Vets usually recommend a check-up for a {pet} once a year, especially an older "
             "one.")),
    Subject("I moved to {city} in {month} for the new job and I'm still looking for a flat "
            "near the centre.",
            ("Which city did I move to?", "Where do I live now?", "When did I move to {city}?"),
            ("My cousin {person} lives in {city2}, we visit each other every couple of months.",
             "A: Flats near the centre tend to go quickly, it helps to set up alerts on the "
             "rental sites.",
             "The flat viewing on {weekday} was a disappointment, the kitchen was tiny and dark.",
             "I still haven't unpacked half of the boxes from the move, they're stacked in the "
             "hallway.",
             "A: Moving is stressful; would you like a checklist for setting up utilities and "
             "internet?")),
    Subject("I work as a {job} at {company}; most weeks I do three long shifts and one short "
            "one.",
            ("What is my job?", "Where do I work?", "What do I do for a living?"),
            ("{company} announced a reorganisation today, nobody knows yet what it means for our "
             "team.",
             "My manager asked me to cover an extra shift on {weekday}, I said yes but I'm tired.",
             "A: Long shifts are hard on sleep; try to keep the same wake-up time on your days "
             "off.",
             "My friend {person} is thinking about becoming a {partner_job} and asked me for "
             "advice.",
             "Work was chaotic today, two colleagues were off sick and the phones never stopped.")),
    Subject("I'm allergic to {allergen}, so I always have to tell new doctors and check labels "
            "twice.",
            ("What am I allergic to?", "Do I have any allergies?",
             "Is there anything I should avoid because of an allergy?"),
            ("A: When you eat out, it's worth telling the waiter about allergies before you "
             "order.",
             "My {relation} had a mild allergic reaction at school and the nurse called me.",
             "I booked an appointment with a new doctor for {weekday} about the rash on my arm.",
             "A: Reading labels carefully helps, as ingredients change between brands.",
             "The pharmacy was out of my usual antihistamines, so I got a different brand.")),
    Subject("I've been {diet} for about {n} years now, ever since I shared a flat with a chef.",
            ("What diet do I follow?", "Do I eat meat?",
             "What should I keep in mind when cooking for me?"),
            ("A: For a dinner party, a couple of {diet} dishes would suit most of your guests.",
             "I tried a new recipe with lentils and smoked paprika last night, it was great.",
             "My {partner} and I can never agree on where to eat on {weekday} nights.",
             "A: Here are three quick dinner ideas with beans, rice and roasted vegetables.",
             "The restaurant near the office changed its menu and now there's nothing I like.")),
    Subject("On weekends I go {hobby} with my {partner} near the {place}, unless the weather is "
            "terrible.",
            ("What do I do on weekends?", "What is my hobby?", "Where do I go {hobby}?"),
            ("A: The forecast for the weekend looks windy near the {place}, maybe plan something "
             "indoors.",
             "I've been thinking about taking up {hobby2}, a friend of mine swears by it.",
             "I bought new gear for the weekend trips but it still hasn't arrived.",
             "My {partner} hurt an ankle last weekend so we stayed home and watched films.",
             "A: A club can be a good way to meet people who share your hobbies in a new city.")),
    Subject("My birthday is on {month} {day}; this year I'm planning a small dinner with a few "
            "friends.",
            ("When is my birthday?", "What am I planning for my birthday?",
             "What date was I born on?"),
            ("It's {person}'s birthday on {weekday}, I still need to find a present for them.",
             "A: For a small dinner, booking a table a couple of weeks ahead is usually enough.",
             "My {relation} wants a dinosaur cake for the party, I have no idea how to make one.",
             "I forgot my friend's birthday last year and I still feel bad about it.",
             "A: Would you like ideas for presents for someone who already has everything?")),
    Subject("I drive an old {colour} {car} that keeps breaking down; the garage knows me by name "
            "by now.",
            ("What car do I drive?", "What colour is my car?", "Which car keeps breaking down?"),
            ("The garage called, the repair will take until {weekday} and cost more than they "
             "said.",
             "A: For an older car, a yearly service can prevent the most expensive breakdowns.",
             "My {partner} wants us to buy an electric car next year, I'm not sure we can afford "
             "it.",
             "Parking near the new flat is a nightmare, I circled for twenty minutes yesterday.",
             "I took the train instead of driving today and honestly it was more relaxing.")),
    Subject("I love {genre}, especially {artist}, and I play the {instrument} badly on Sunday "
            "mornings.",
            ("What music do I like?", "Which instrument do I play?",
             "Who is my favourite musician?"),
            ("A: There's a {genre} festival in {month}, shall I look up the line-up for you?",
             "My neighbour complained about the noise again, so I only practise in the "
             "afternoon.",
             "I went to a concert with {person} last night, the sound was awful but the band was "
             "fun.",
             "A: Short daily practice sessions help more than one long session a week.",
             "I'm thinking about taking lessons, I've plateaued after teaching myself for years.")),
    Subject("I prefer {drink} over {drink2}, usually one cup in the afternoon and never after "
            "six.",
            ("What do I like to drink?", "What's my usual afternoon drink?",
             "Do I prefer {drink2}?"),
            ("A: Cutting caffeine in the evening often helps with falling asleep earlier.",
             "The new café near work does a decent {drink2}, but the queue is always long.",
             "I ran out of my usual {drink} this morning and had to make do with water.",
             "My {partner} drinks about five cups a day, I don't know how they sleep.",
             "A: If you like trying new things, a tasting set is a nice small present.")),
    Subject("We booked flights to {city2} for our anniversary in {month2}; it's our first trip "
            "abroad together.",
            ("Where are we going for our anniversary?", "When is our anniversary trip?",
             "Which flights did we book?"),
            ("A: For {city2} in {month2}, pack layers, the evenings can be cooler than you "
             "expect.",
             "My {partner} wants to go hiking on the trip, I'd rather just sit in cafés and read.",
             "We still need to find someone to water the plants while we're away.",
             "I compared hotel prices for hours yesterday and booked nothing in the end.",
             "A: Travel insurance is worth checking before a trip abroad, especially the "
             "cancellation terms.")),
    Subject("My {relation} {person} starts school in {month}, so mornings are about to get a lot "
            "busier.",
            ("When does my {relation} start school?", "What is my {relation}'s name?",
             "Who is starting school soon?"),
            ("A: A practice run of the school morning the week before can make the first day "
             "easier.",
             "{person2} from next door offered to walk the kids to school on {weekday}s.",
             "We bought a school bag that is almost as big as the kid who will carry it.",
             "My {relation} refused to eat breakfast again, every morning is a negotiation.",
             "A: Labelling clothes and lunch boxes saves a lot of lost-property hunting.")),
    Subject("The doctor said my {condition} should improve if I sleep more and take short walks "
            "every day.",
            ("What did the doctor say about my {condition}?", "What health problem do I have?",
             "What was the doctor's advice?"),
            ("A: Would you like me to set a daily reminder for a short walk after lunch?",
             "I slept badly again, I was awake from three until about five this morning.",
             "My appointment with the doctor moved to {weekday}, the clinic called this morning.",
             "A: A regular bedtime and less screen time in the evening can improve sleep "
             "quality.",
             "{person} recommended a physiotherapist, I'll call them after work.")),
    Subject("I'm learning {language} on an app, twenty minutes every morning before work, for a "
            "trip next year.",
            ("Which language am I learning?", "How am I learning {language}?",
             "What do I study every morning?"),
            ("A: Pairing the app with a weekly conversation partner speeds things up a lot.",
             "I keep confusing the words for Tuesday and Thursday, it's embarrassing.",
             "My streak on the app broke yesterday after ninety days, I'm annoyed at myself.",
             "{person} speaks {language} fluently and offered to practise with me on "
             "{weekday}s.",
             "A: Watching films with subtitles in the language you're learning helps your ear.")),
    Subject("I'm training for the {city} {event} in the {season}; I run four times a week.",
            ("Which race am I training for?", "How often do I train?", "When is my {event}?"),
            ("A: Adding one easy week every month helps avoid injuries when training for a "
             "race.",
             "My legs were so sore after the long run on {weekday} that I took the stairs "
             "backwards.",
             "I bought new running shoes and they gave me blisters straight away.",
             "{person} wants to join me for the training runs, but they're much faster than me.",
             "A: Eat something light with carbohydrates about two hours before a long run.")),
    Subject("I'm reading {book} again; it's my favourite novel and I reread it every {season}.",
            ("What book am I reading?", "What is my favourite novel?",
             "Which novel do I reread?"),
            ("A: If you enjoy rereading classics, a book club could be a good fit for you.",
             "I started a new thriller on the train but gave up after fifty pages.",
             "{person} lent me three novels and I haven't opened any of them yet.",
             "The library near the new flat has a surprisingly good second-hand shelf.",
             "A: Audiobooks are a nice way to keep reading during a long commute.")),
    Subject("I hate early meetings; my daily standup is at {time} and I'm barely awake for it.",
            ("When is my standup?", "What time is my daily meeting?",
             "Which meetings do I dislike?"),
            ("A: Blocking your calendar for focus time in the morning can protect your best "
             "hours.",
             "The meeting on {weekday} ran for two hours and we decided nothing at all.",
             "My manager moved the team lunch to {weekday2}, which clashes with my dentist.",
             "A: A short written update can replace many meetings, if the team agrees.",
             "I was late to the call again because my laptop decided to update itself.")),
    Subject("My {partner} {person2} is a {partner_job}, so we rarely have the same weekends off.",
            ("What does my {partner} do?", "What is my {partner}'s name?",
             "Why don't we share weekends?"),
            ("A: Planning one fixed evening a week together can help when schedules clash.",
             "We finally had a whole {weekday} off together and spent it doing nothing.",
             "My {partner} is away for work until {weekday}, the house feels very quiet.",
             "A: Shared calendars make it easier to spot free days for both of you.",
             "We argued about whose turn it was to cook, it was silly and we laughed about it "
             "later.")),
)
CHAT = (
    "Thanks, that helps a lot. Could you put the main points in a short list for me?",
    "A: Of course. Here is a shorter version of the plan with the key steps for {weekday}.",
    "Can you summarise what we discussed yesterday? I lost track halfway through.",
    "A: Sure, happy to help. Let me know if you'd like more detail on any of these points.",
    "That's not quite what I meant, I was asking about the second option, not the first.",
    "A: Sorry about the confusion. The second option is cheaper but takes about a week longer.",
    "Let's pick this up tomorrow, I need to get some sleep before my early start.",
    "A: Good night! I'll keep this conversation so we can continue where we stopped.",
    "Honestly the weather has been awful all week, grey skies and rain every afternoon.",
    "I had the strangest dream last night about missing a train to {city}.",
    "A: That sounds frustrating. Would it help to write down the steps before you start?",
    "Can you draft a polite email to cancel the appointment on {weekday}? Keep it short.",
    "A: Here's a draft: thank you for your time, unfortunately I need to cancel on {weekday}.",
    "I keep forgetting to pay the electricity bill, can you remind me on the {day}th?",
    "A: Done. I'll remind you on the {day}th of each month about the electricity bill.",
    "What's a good way to stop procrastinating when a task feels too big to start?",
    "A: Try splitting it into ten-minute pieces and start with the smallest, easiest one.",
    "I spent the whole evening cleaning the kitchen and it still doesn't look clean.",
    "My phone screen cracked again, third time this year, I should get a proper case.",
    "A: Many shops repair screens the same day; it may be cheaper than a new phone.",
)
# Short turns get one of these, as people and assistants pad their messages.
TAILS = {"user": ("Anyway, that's where things stand.", "Just so you know.",
                  "Not a big deal, though.", "We'll see how it goes.", "I'll keep you posted.",
                  "Long day.", "Does that make sense?", "Sorry for the long message.",
                  "More on that later.", "Oh well.", "Let me know what you think.",
                  "That's all for now."),
         "assistant": ("Let me know if that helps.", "Happy to go into more detail.",
                       "Just a thought.", "Shall I add that to your notes?",
                       "Tell me if you want alternatives.")}
SHORT_TURN = 96  # bytes
POOLS = {
    "pet_name": "Pixel Mochi Biscuit Luna Olive Pepper Juno Miso Toby Nala Ziggy Clover Rocket "
                "Hazel Maple Otis Pippa Sunny Bruno Kiwi",
    "person": "Sofia Alex Priya Tomas Ines Kenji Amara Lucas Noor Mateo Hana Oskar Leila Ravi "
              "Elena Yusuf Greta Diego Mei Jonas",
    "pet": "dog cat parrot rabbit hamster tortoise",
    "city": "Lisbon Porto Madrid Berlin Paris Tokyo Osaka Seoul Toronto Boston Denver Austin "
            "Chicago Nairobi Oslo Prague Vienna Dublin",
    "job": "nurse|teacher|backend engineer|illustrator|architect|dentist|pilot|chef|lawyer|"
           "pharmacist|accountant|electrician|data analyst|librarian",
    "company": "Globex Initech Umbrella Hooli Vandelay Acme Stark Wayne Soylent Tyrell "
               "Cyberdyne Wonka",
    "allergen": "penicillin|peanuts|shellfish|cat hair|pollen|lactose|sesame|bee stings|latex|"
                "gluten",
    "diet": "vegetarian vegan pescatarian gluten-free keto halal",
    "hobby": "surfing climbing cycling hiking pottery knitting chess rowing sailing "
             "birdwatching running swimming",
    "place": "beach|lake|old harbour|hills|river|national park",
    "instrument": "saxophone piano violin guitar cello drums ukulele trumpet",
    "music": "jazz:Coltrane|blues:B.B. King|opera:Puccini|techno:Kraftwerk|reggae:Bob Marley|"
             "folk:Joni Mitchell|classical:Bach|soul:Aretha Franklin",
    "drink": "green tea|black coffee|matcha|espresso|herbal tea|hot chocolate|oat latte|"
             "sparkling water",
    "colour": "blue red green silver white yellow black",
    "car": "Fiat Volvo Toyota Renault Skoda Honda Mini Peugeot",
    "month": "January February March April May June July August September October November "
             "December",
    "weekday": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
    "relation": "daughter|son|niece|nephew|little brother|little sister",
    "partner": "wife husband partner girlfriend boyfriend",
    "condition": "back pain|migraines|insomnia|asthma|knee injury|hay fever",
    "language": "Japanese Portuguese German Korean Italian Swahili Polish Dutch Arabic Mandarin",
    "book": "Middlemarch Dune Beloved Rebecca Persuasion Solaris Ulysses Kindred Stoner Piranesi",
    "time": "8:30 9:00 9:30 10:15 7:45 11:00",
    "season": "spring summer autumn winter",
    "event": "marathon|half marathon|triathlon|10k race|cycling sportive",
}
WORDS = {name: words.split("|") if "|" in words else words.split()
         for name, words in POOLS.items()}
# A person's distractor turns keep these of the person's own (their pet, their partner...),
# so that they share the question's words; everything else is drawn afresh.
OWN = ("pet", "relation", "partner", "language", "event", "diet", "drink", "drink2", "city2",
       "month2", "condition")


def slot_values(rng: random.Random) -> dict[str, Any]:
    pick = {name: rng.choice(words) for name, words in WORDS.items()}
    genre, artist = pick.pop("music").split(":")
    return {**pick, "genre": genre, "artist": artist, "age": rng.randint(2, 14),
            "day": rng.randint(1, 28), "n": rng.randint(2, 9), "city2": rng.choice(WORDS["city"]),
            "month2": rng.choice(WORDS["month"]), "drink2": rng.choice(WORDS["drink"]),
            "hobby2": rng.choice(WORDS["hobby"]), "weekday2": rng.choice(WORDS["weekday"]),
            "person2": rng.choice(WORDS["person"]), "partner_job": rng.choice(WORDS["job"])}


def turn(template: str, values: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """(role, text) of a template."""
    role = "assistant" if template.startswith("A: ") else "user"
    text = template.removeprefix("A: ").format(**values)
    if len(text.encode()) < SHORT_TURN:
        text += " " + rng.choice(TAILS[role])
    return role, text


@dataclass
class Person:
    user: str
    turns: list[tuple[str, str]]  # (role, text) in the order they are added
    questions: list[tuple[str, int]]  # (question, index of its evidence turn)


def person(seed: int, index: int, memories: int, questions: int) -> Person:
    if memories < len(SUBJECTS) or questions > len(SUBJECTS):
        raise SystemExit(f"a person needs >= {len(SUBJECTS)} memories and <= {len(SUBJECTS)} "
                         "questions")
    rng = random.Random(f"{seed}:{index}")
    own = slot_values(rng)
    facts = [turn(subject.fact, own, rng) for subject in SUBJECTS]  # subject i's is turn i
    others = [turn(template, slot_values(rng) | {name: own[name] for name in OWN}, rng)
              for subject in SUBJECTS for template in subject.near]
    while len(others) < memories - len(facts):
        others.append(turn(rng.choice(CHAT), slot_values(rng), rng))
    turns = facts + others[: memories - len(facts)]
    order = rng.sample(range(len(turns)), len(turns))  # new position -> old
    place = {old: new for new, old in enumerate(order)}
    asked = rng.sample(range(len(SUBJECTS)), questions)
    return Person(
        user=f"person-{index}",
        turns=[turns[i] for i in order],
        questions=[(rng.choice(SUBJECTS[s].questions).format(**own), place[s]) for s in asked],
    )


def dataset(seed: int, users: int, memories: int, queries: int) -> list[Person]:
    per_person = math.ceil(queries / users)
    people = [person(seed, i, memories, per_person) for i in range(users)]
    surplus = per_person * users - queries  # drop the last people's extra questions
    for p in people[users - surplus:]:
        p.questions.pop()
    return people


# --- the systems -----------------------------------------------------------------------------

Item = tuple[str, int, str, str]  # user, turn index, role, text
Query = tuple[str, str]  # user, question


class Side(Protocol):
    def add(self, items: list[Item]) -> tuple[list[float], list[str]]: ...

    def search(self, queries: list[Query]) -> tuple[list[float], list[list[str]]]: ...

    def throughput(self, queries: list[Query], clients: int, seconds: float) -> tuple[int, int]:
        ...

    def cpu_seconds(self) -> float:
        """CPU used so far by every process an operation runs in, the database included."""
        ...


def note_path(index: int) -> str:
    return f"/memories/dialogue/turn-{index:03d}.md"


_TURN = re.compile(r"turn-(\d+)\.md$")


class MemoryHubSide:
    """The API as an agent uses it, over loopback HTTP."""

    def __init__(self, base: str, key: str, env: dict[str, str]) -> None:
        self.base, self.key, self.env = base, key, env
        self.client = Client(base, key)

    def cpu_seconds(self) -> float:
        """The client (this process), gunicorn and the database cluster."""
        return time.process_time() + server_cpu_seconds(self.env, self.base)

    def add(self, items: list[Item]) -> tuple[list[float], list[str]]:
        self.client.close()  # idle for longer than gunicorn's keep-alive while mem0 ran
        ms, ids = [], []
        for user, index, _role, text in items:
            body = {"command": "create", "path": note_path(index), "file_text": text,
                    "turn_id": f"{user}-{index}"}
            started = time.perf_counter()
            status, reply = self.client.post(f"/api/v1/users/{user}/memory", json=body)
            ms.append((time.perf_counter() - started) * 1000)
            if status != 200 or json.loads(reply)["is_error"]:
                raise SystemExit(f"create {user} {index}: {status} {reply[:300]!r}")
            ids.append(f"{user}/{index}")
        return ms, ids

    def search(self, queries: list[Query]) -> tuple[list[float], list[list[str]]]:
        self.client.close()
        ms, found = [], []
        for user, question in queries:
            started = time.perf_counter()
            results = recall(self.client, user, question)
            ms.append((time.perf_counter() - started) * 1000)
            found.append([f"{user}/{int(m.group(1))}" for r in results
                          if (m := _TURN.search(r["path"] or ""))])
        return ms, found

    def throughput(self, queries: list[Query], clients: int, seconds: float) -> tuple[int, int]:
        start = time.time() + 0.5  # every process forked and connected before the clock
        results = run_clients(recall_loop, lambda i: (self.base, self.key, queries[i::clients],
                                                      start, seconds), clients)
        return sum(r[0] for r in results), sum(r[1] for r in results)


def recall(client: Client, user: str, question: str) -> list[dict]:
    status, reply = client.post(f"/api/v1/users/{user}/recall",
                                json={"query": question, "limit": LIMIT})
    if status != 200:
        raise RuntimeError(f"recall {user}: {status} {reply[:300]!r}")
    results: list[dict] = json.loads(reply)["results"]
    return results


def recall_loop(base: str, key: str, queries: list[Query], start: float, seconds: float,
                out: mp.Queue) -> None:
    client = Client(base, key)
    done = errors = 0
    time.sleep(max(0.0, start - time.time()))
    while time.time() < start + seconds:
        user, question = queries[(done + errors) % len(queries)]
        try:
            recall(client, user, question)
        except Exception:  # counted and reported
            errors += 1
            client.close()
            continue
        done += 1
    out.put((done, errors))


class Mem0Side:
    """One mem0_side.py process (one store) in the mem0 environment, over its pipe."""

    def __init__(self, python: Path, store: str, folder: Path, dsn: str,
                 database_cpu: Callable[[], float]) -> None:
        self.database_cpu = database_cpu
        self.log_path = folder / f"mem0-{store}.log"
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [str(python), str(Path(__file__).with_name("mem0_side.py")), "--store", store,
             "--dir", str(folder), "--dsn", dsn],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
            cwd=ROOT)

    def call(self, op: str, **arguments: Any) -> dict:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            self.log.flush()
            raise SystemExit(f"mem0 ({op}) stopped:\n{self.log_path.read_text()[-3000:]}")
        reply: dict = json.loads(line)
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self._quit()
            self.proc.wait(timeout=30)
        self.log.close()

    def _quit(self) -> None:
        stdin: IO[str] | None = self.proc.stdin
        if stdin is not None:
            stdin.write(json.dumps({"op": "quit"}) + "\n")
            stdin.close()

    def cpu_seconds(self) -> float:
        """mem0's process and the database cluster (with MemoryHub's idle gunicorn)."""
        stat = Path(f"/proc/{self.proc.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (command)"
        own = sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")  # user, system
        return own + self.database_cpu()

    def add(self, items: list[Item]) -> tuple[list[float], list[str]]:
        reply = self.call("add", items=[[user, role, text] for user, _, role, text in items])
        return reply["ms"], reply["ids"]

    def search(self, queries: list[Query]) -> tuple[list[float], list[list[str]]]:
        reply = self.call("search", queries=queries, limit=LIMIT)
        return reply["ms"], reply["ids"]

    def throughput(self, queries: list[Query], clients: int, seconds: float) -> tuple[int, int]:
        reply = self.call("throughput", queries=queries, limit=LIMIT, clients=clients,
                          seconds=seconds)
        return reply["count"], reply["errors"]


def mem0_python(venv: Path = MEM0_VENV) -> Path:
    """The mem0 environment's interpreter; (re)installs it when its packages differ."""
    python, stamp = venv / "bin" / "python", venv / "installed.txt"
    wanted = "\n".join(MEM0_PACKAGES) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    print(f"installing {', '.join(MEM0_PACKAGES)} into {venv.relative_to(ROOT)}", flush=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *MEM0_PACKAGES], check=True)
    stamp.write_text(wanted)
    return python


@contextmanager
def production_server(env: dict[str, str], log: Path) -> Iterator[str]:
    """gunicorn as ``make run`` starts it: deploy/gunicorn.conf.py (WEB_WORKERS and
    WEB_THREADS, 2 and 2 by default), on a port of its own."""
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy" / "gunicorn.conf.py"),
           "memoryhub.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    with serving(cmd, env, port, "gunicorn", log=log) as base:
        yield base


# --- the run ---------------------------------------------------------------------------------


@dataclass
class Figures:
    adds_per_s: list[float] = field(default_factory=list)
    add_p50: list[float] = field(default_factory=list)
    add_p95: list[float] = field(default_factory=list)
    add_cpu: list[float] = field(default_factory=list)  # ms per add
    search_p50: list[float] = field(default_factory=list)
    search_p95: list[float] = field(default_factory=list)
    search_cpu: list[float] = field(default_factory=list)
    searches_per_s: list[float] = field(default_factory=list)
    found: int = 0
    asked: int = 0


def rotated(names: list[str], round_: int) -> list[str]:
    """The systems under test (``--systems``), each round starting one further along."""
    return [names[(round_ + i) % len(names)] for i in range(len(names))]


def add_round(sides: dict[str, Side], people: list[Person], round_: int, rounds: int,
              figures: dict[str, Figures], owner: dict[str, dict[str, tuple[str, int]]]) -> None:
    mine = people[round_::rounds]
    # Turn by turn across the round's people, as agents serving many people write.
    items = [(p.user, i, *p.turns[i]) for i in range(max(len(p.turns) for p in mine))
             for p in mine if i < len(p.turns)]
    print(f"\nadds, round {round_ + 1} of {rounds}: {len(mine)} people x "
          f"{len(mine[0].turns)} turns, one sequential client", flush=True)
    for name in rotated(list(sides), round_):
        cpu, started = sides[name].cpu_seconds(), time.perf_counter()
        ms, ids = sides[name].add(items)
        elapsed = time.perf_counter() - started
        f = figures[name]
        f.add_cpu.append((sides[name].cpu_seconds() - cpu) * 1000 / len(items))
        owner[name].update({id_: (user, index) for id_, (user, index, _, _) in
                            zip(ids, items, strict=True)})
        f.adds_per_s.append(len(items) / elapsed)
        f.add_p50.append(percentile(ms, 50))
        f.add_p95.append(percentile(ms, 95))
        print(f"  {TITLES[name]:<22}{len(items):>6} adds {f.adds_per_s[-1]:>7.0f} adds/s   "
              f"p50 {f.add_p50[-1]:6.2f} ms  p95 {f.add_p95[-1]:6.2f} ms  "
              f"CPU {f.add_cpu[-1]:5.2f} ms per add", flush=True)


def search_round(sides: dict[str, Side], questions: list[tuple[Query, int]], round_: int,
                 rounds: int, figures: dict[str, Figures],
                 owner: dict[str, dict[str, tuple[str, int]]], clients: int,
                 seconds: float) -> None:
    mine = questions[round_::rounds]
    queries = [query for query, _ in mine]
    print(f"\nsearches, round {round_ + 1} of {rounds}: {len(mine)} questions from one client, "
          f"then {clients} clients for {seconds:g} s", flush=True)
    for name in rotated(list(sides), round_):
        cpu = sides[name].cpu_seconds()
        ms, found = sides[name].search(queries)
        search_cpu = (sides[name].cpu_seconds() - cpu) * 1000 / len(queries)
        hits = sum((query[0], evidence) in {owner[name].get(id_) for id_ in ids[:LIMIT]}
                   for (query, evidence), ids in zip(mine, found, strict=True))
        count, errors = sides[name].throughput(queries, clients, seconds)
        f = figures[name]
        f.found, f.asked = f.found + hits, f.asked + len(mine)
        f.search_p50.append(percentile(ms, 50))
        f.search_p95.append(percentile(ms, 95))
        f.search_cpu.append(search_cpu)
        f.searches_per_s.append(count / seconds)
        print(f"  {TITLES[name]:<22}p50 {f.search_p50[-1]:7.2f} ms  p95 {f.search_p95[-1]:7.2f} "
              f"ms  CPU {search_cpu:6.2f} ms  recall@10 {hits / len(mine):.3f}   {clients} clients "
              f"{f.searches_per_s[-1]:6.0f} searches/s ({errors} errors)", flush=True)


def embed_all(env: dict[str, str], tenant_id: int, total: int, folder: Path) -> None:
    """A real worker embeds every passage the adds enqueued; returns when all have a vector."""
    from memoryhub.models import Passage
    from tenants.context import tenant_context

    print(f"\nembedding MemoryHub's {total} passages with a Celery worker (2 processes)...",
          flush=True)
    worker = start_worker(env, str((folder / "worker.log").resolve()))
    started = time.monotonic()
    try:
        while True:
            with tenant_context(tenant_id):
                done = Passage.objects.filter(embedding__isnull=False).count()
            if done >= total:
                break
            if time.monotonic() - started > 900:
                raise SystemExit(f"only {done} of {total} passages embedded after 900 s")
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    elapsed = time.monotonic() - started
    print(f"  embedded in {elapsed:.0f} s ({total / elapsed:.0f} passages/s)", flush=True)


def check_embedder(mem0_sides: dict[str, Mem0Side]) -> None:
    """Every side embeds alike: mem0's probe vector is MemoryHub's provider's, to 1e-9."""
    from memoryhub.infra.embeddings import get_provider, provider_key

    provider = get_provider()
    ours = np.asarray(provider.embed([PROBE])[0])
    for name, side in mem0_sides.items():
        hello = side.call("hello")
        gap = float(np.max(np.abs(ours - np.asarray(hello["probe"]))))
        if gap > 1e-9:
            raise SystemExit(f"{name}: mem0's embedder differs from {provider_key(provider)} "
                             f"by {gap}")
        print(f"{TITLES[name]}: " + ", ".join(f"{k} {v}" for k, v in hello["versions"].items())
              + f"; embedder = MemoryHub's {provider_key(provider)}", flush=True)


def analyze(conninfos: list[str]) -> None:
    import psycopg

    for conninfo in conninfos:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("ANALYZE")


def report(figures: dict[str, Figures], rounds: int, clients: int) -> None:
    med = statistics.median
    rows = [
        ("adds/s, 1 client, sequential", lambda f: med(f.adds_per_s), "{:.0f}"),
        ("add p50 ms", lambda f: med(f.add_p50), "{:.2f}"),
        ("add p95 ms", lambda f: med(f.add_p95), "{:.2f}"),
        ("CPU ms per add", lambda f: med(f.add_cpu), "{:.2f}"),
        ("search p50 ms, 1 client", lambda f: med(f.search_p50), "{:.2f}"),
        ("search p95 ms, 1 client", lambda f: med(f.search_p95), "{:.2f}"),
        ("CPU ms per search", lambda f: med(f.search_cpu), "{:.2f}"),
        (f"searches/s, {clients} clients", lambda f: med(f.searches_per_s), "{:.0f}"),
        ("evidence recall@10", lambda f: f.found / f.asked, "{:.3f}"),
    ]
    names = [name for name in SYSTEMS if name in figures]
    others = [name for name in names if name != "memoryhub"]
    print(f"\nmedians of {rounds} rounds (recall@10 over every question):")
    print(f"{'figure':<31}" + "".join(f"{TITLES[n]:>22}" for n in names)
          + "".join(f"{'MemoryHub / ' + n:>24}" for n in others if "memoryhub" in names))
    for title, value, form in rows:
        line = f"{title:<31}" + "".join(f"{form.format(value(figures[n])):>22}" for n in names)
        if "memoryhub" in names:
            line += "".join(f"{value(figures['memoryhub']) / value(figures[n]):>24.2f}"
                            for n in others)
        print(line)
    print("(ratios: above 1 is MemoryHub ahead for adds/s, searches/s and recall; below 1 for "
          "the latencies and CPU. CPU: every process an operation runs in, from /proc: for "
          "MemoryHub the client, gunicorn and the database; for mem0 its process and the "
          "database; the figure a busy machine distorts least)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="15 people, 150 questions, 2 s of 4 clients: about 2 minutes")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--memories", type=int, default=200, help="turns per person")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5, help="of the clients' searches")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help="a subset of " + ",".join(SYSTEMS))
    args = parser.parse_args()
    one_each_at_least(parser, args, "users")
    if args.quick:
        args.users, args.queries, args.seconds = 15, 150, 2
    chosen = [name for name in SYSTEMS if name in args.systems.split(",")]
    python = mem0_python() if set(chosen) - {"memoryhub"} else None
    env = {**bench_env(DB_NAME), "EMBEDDINGS_PROVIDER": "hashing", "EMBEDDINGS_DIMENSION": "384"}
    setup_django(env)
    from django.conf import settings

    from memoryhub.infra.embedded_db import OWNER_ROLE, Cluster, ensure_database
    from tenants.models import Tenant
    from tenants.services import api_key_create

    if not settings.EMBEDDED_POSTGRES:
        raise SystemExit("bench-vs-mem0 puts mem0's pgvector database beside MemoryHub's on the "
                         "embedded PostgreSQL: run it with DATABASE_URL unset")
    cluster = Cluster(**settings.EMBEDDED_POSTGRES)
    ensure_database(cluster, DB_NAME, recreate=True)
    ensure_database(cluster, MEM0_DB_NAME, recreate=True)
    manage(env, "migrate", "--no-input")
    purge_queue(env)  # what an interrupted run left
    tenant = Tenant.objects.create(slug="bench-vs-mem0", name="Bench vs mem0")
    key = api_key_create(tenant=tenant, name="bench", permissions=["memory"]).plaintext
    folder = Path(env.get("MEMORYHUB_DATA_DIR") or ROOT / "var").resolve() / "bench-vs-mem0"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    print(machine_speed(env), flush=True)

    people = dataset(args.seed, args.users, args.memories, args.queries)
    turns = [len(p.turns) for p in people]
    sizes = [len(text.encode()) for p in people for _, text in p.turns]
    print(f"data: {len(people)} people x {turns[0]} dialogue turns (mean "
          f"{statistics.mean(sizes):.0f} bytes), {sum(len(p.questions) for p in people)} "
          f"questions with one evidence turn each (seed {args.seed})", flush=True)
    questions = [((p.user, q), evidence) for p in people for q, evidence in p.questions]
    random.Random(args.seed).shuffle(questions)
    owner_dsn = f"host={cluster.socket_dir} port={cluster.port} user={OWNER_ROLE}"
    with production_server(env, folder / "gunicorn.log") as base, mem0_sides(
            python, chosen, folder, f"{owner_dsn} dbname={MEM0_DB_NAME}",
            lambda: server_cpu_seconds(env, base)) as mem0:
        check_embedder(mem0)
        sides: dict[str, Side] = {**mem0, "memoryhub": MemoryHubSide(base, key, env)}
        sides = {name: sides[name] for name in chosen}
        figures = {name: Figures() for name in chosen}
        owner: dict[str, dict[str, tuple[str, int]]] = {name: {} for name in chosen}
        warm = [(WARM_USER, i, *people[0].turns[i]) for i in range(WARM_TURNS)]
        for side in sides.values():  # connections, pools, collections and caches made
            side.add(warm)
        for round_ in range(args.rounds):
            add_round(sides, people, round_, args.rounds, figures, owner)
        if "memoryhub" in sides:
            embed_all(env, tenant.id, sum(turns) + WARM_TURNS, folder)
        analyze([cluster.superuser_conninfo(DB_NAME), cluster.superuser_conninfo(MEM0_DB_NAME)])
        for side in sides.values():
            side.search([(WARM_USER, text) for _, text in people[0].turns[:WARM_TURNS]])
        for round_ in range(args.rounds):
            search_round(sides, questions, round_, args.rounds, figures, owner, args.clients,
                         args.seconds)
    purge_queue(env)
    report(figures, args.rounds, args.clients)
    os.environ.pop("MEMORYHUB_DB_NAME", None)


@contextmanager
def mem0_sides(python: Path | None, chosen: list[str], folder: Path, dsn: str,
               database_cpu: Callable[[], float]) -> Iterator[dict[str, Mem0Side]]:
    sides: dict[str, Mem0Side] = {}
    try:
        for store in ("qdrant", "pgvector"):
            if store in chosen and python is not None:
                sides[store] = Mem0Side(python, store, folder,
                                        dsn if store == "pgvector" else "", database_cpu)
        yield sides
    finally:
        for side in sides.values():
            side.close()


if __name__ == "__main__":
    main()
