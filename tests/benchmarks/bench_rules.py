"""The rules extractor's throughput: messages per second on N processes (default 2, the
machine's two cores), statements and the extractive summary included (hashing embeddings,
the default provider), no database: what a worker spends on extraction alone.

    make bench-rules                       # 20,000 messages, 2 processes
    make bench-rules BENCH_ARGS="--messages 100000 --processes 1"

Conversations of 20 messages: half the user's, half the assistant's; a third of the
user's state a fact, the rest are chatter, questions and hypotheticals.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import UTC, datetime
from multiprocessing import Pool

from memoryhub.augmentation.base import ExtractionContext, SourceMessage
from memoryhub.augmentation.rules import RulesExtractor
from memoryhub.infra.embeddings.hashing import HashingProvider

CONVERSATION = 20
STATEMENTS = ["I live in {city}.", "I work at {company} as a nurse.", "I love {thing}!",
              "My dog is called {name}.", "I don't like {thing} anymore.", "I'm vegetarian.",
              "My birthday is May {day}.", "Call me {name}."]
CHATTER = ["Could you help me plan the week? I have a lot going on.",
           "What would happen if I moved to {city}?", "Thanks, that is really useful.",
           "Do I like {thing}? I am not sure.", "My sister likes {thing} a lot, she says."]
ASSISTANT = ["Sure. Here is a plan for the week, with time for {thing} on Friday.",
             "{city} is a lovely place; the weather in spring is mild. Anything else?"]
WORDS = {"city": ["Lisbon", "Porto", "Oslo", "St. Petersburg"], "company": ["Acme", "Globex"],
         "thing": ["jazz", "hiking", "coffee", "dark mode"], "name": ["Rex", "Ana", "Tom"],
         "day": [str(d) for d in range(1, 29)]}


def conversation(rng: random.Random, number: int) -> list[SourceMessage]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    said = []
    for seq in range(1, CONVERSATION + 1):
        if seq % 2 == 0:
            role, template = "assistant", rng.choice(ASSISTANT)
        else:
            role = "user"
            template = rng.choice(STATEMENTS if rng.random() < 1 / 3 else CHATTER)
        text = template.format(**{k: rng.choice(v) for k, v in WORDS.items()})
        said.append(SourceMessage(id=f"{number}-{seq}", seq=seq, role=role, content=text,
                                  created_at=at))
    return said


def work(args: tuple[int, int]) -> tuple[int, int]:
    """Extract ``count`` conversations (seeded by ``seed``); returns (messages, candidates)."""
    seed, count = args
    rng = random.Random(seed)
    batches = [conversation(rng, n) for n in range(count)]
    extractor = RulesExtractor(embeddings=HashingProvider())
    found = 0
    summary = ""
    for batch in batches:
        extraction = extractor.extract(batch, ExtractionContext(previous_summary=summary))
        found += len(extraction.candidates)
        summary = extraction.summary or ""
    return count * CONVERSATION, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--processes", type=int, default=2)
    options = parser.parse_args()
    conversations = max(1, options.messages // CONVERSATION)
    share = [conversations // options.processes + (i < conversations % options.processes)
             for i in range(options.processes)]
    loop = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i
    print(f"machine: 2M-step Python loop {(time.perf_counter() - loop) * 1000:.0f} ms")
    with Pool(options.processes) as pool:
        pool.map(work, [(99, 5)] * options.processes)  # warm: imports, the splitter's rules
        started = time.perf_counter()
        results = pool.map(work, list(enumerate(share)))
        elapsed = time.perf_counter() - started
    messages = sum(m for m, _ in results)
    found = sum(c for _, c in results)
    print(f"rules extractor: {messages} messages ({found} candidate facts) on "
          f"{options.processes} processes in {elapsed:.2f} s: {messages / elapsed:,.0f} messages/s")


if __name__ == "__main__":
    main()
