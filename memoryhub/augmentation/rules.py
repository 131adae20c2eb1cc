"""The ``rules`` extractor: offline, deterministic, no model.

It reads the ``user`` messages only ("I" and "my" are the user), sentence by sentence and
clause by clause (a clause starts again at ", and I ..." or "but my ..."), and turns these
first-person statements into facts with a triple whose subject is ``user``:

=========================  ===============================================  ===============
statement                  examples                                          predicate
=========================  ===============================================  ===============
name                       my name is Ana; call me Ana; I'm called Ana       name
home                       I live in Lisbon; I moved to Lisbon               home
work                       I work at/for Acme                                employer
job                        I work as a nurse; I'm a nurse                    job
likes                      I like/love/enjoy/prefer jazz                     likes, prefers
dislikes                   I don't like/hate/dislike jazz                    dislikes
no longer                  I no longer like jazz; I don't like jazz anymore  no_longer_likes
diet                       I'm vegetarian/vegan/pescatarian                  diet
diet rules                 I'm gluten-free/lactose intolerant/keto/halal/..  diet_rule
allergies                  I'm allergic to peanuts                           allergic_to
family and pets            my wife/son/dog/... is (called) Rex               wife, son, dog..
birthday                   my birthday is May 3; I was born on May 3         birthday
=========================  ===============================================  ===============

What it does not understand (and so never turns into a fact): questions (a sentence ending
with "?"), hypotheticals and wishes (a sentence with if, would, could, might, wish, imagine,
suppose, maybe, perhaps), statements that do not start with "I" or "my" (so other people's:
"my sister likes jazz", "he said I like jazz"), pronouns and coreference ("it", "there"),
negation other than the forms above, third-person facts, dates in any normal form (a birthday
is kept as written), several objects in one clause ("I like tea and coffee" is one like of
"tea and coffee"), and languages other than English. "I'm a <job>" needs a word that looks
like a job (``_JOB_WORD``) and is not a family, belief, origin or habit word (``_NOT_A_JOB``),
after no word of a trait, a past or a hope (``_NOT_A_JOB_NOW``), so "I'm a big fan", "I'm a
mother", "I'm a Canadian", "I'm a picky eater" and "I'm a former nurse" are not jobs (nor
is "I'm a good cook", though some say it of their trade). Name, home, employer, job, diet
and birthday hold one value at a time, so a statement that only reads like a new one must
not replace the true one: "I live in the moment" (or "in fear", "in a flat": a dwelling
without its place; "I moved to a different team", "to the new office"), "I work at night"
(or "at home", "for myself", "for a living", "at the same company as ...") and "my birthday
is tomorrow" (or "next week", "on Friday", "I was born on a Tuesday") are not facts
(``_NOT_THE_VALUE``). "I moved to GitHub" still is a home: a name is a name.

Sentences are split by ``sentencex`` (Wikimedia's rule-based segmenter: "St. Petersburg" and
"the U.S." stay one sentence), then at line breaks, ``;`` and before an "I"/"my" that follows
".", "!" or ":" ("OK. I work at").

As people type: "Im" is "I'm"; a name after "my name is" may be in lower case ("ana" is
stored "Ana"), and so may a one-word name after "call me" ("call me later" is none); a
hypothetical clause ("and I will visit Paris") drops itself and what follows, not the clause
before it; an object ends where the clause goes on ("Berlin in 2020", "Lisbon with my wife",
"Rex and he is cute", "Acme as an engineer", "Lisbon but work in Porto", "Lisbon for work",
"Lisbon 3 years ago", a job's "engineer at Google"), while "Trinidad and Tobago" stays
whole; a diet is stored in lower case ("I'M VEGAN"), and "My Wife is Maria" is read as "my
wife is Maria". "my", "me", "mine" and "myself" in an object are the user's, said in the
third person ("I love my dog": "User loves their dog"); typed with a capital they are kept
("I like My Chemical Romance").

The summary (``extractive_summary``) is extractive, never written anew: the conversation's
most central sentences (``user`` and ``assistant`` turns; the previous summary's sentences
stand for the messages before the cursor), by cosine similarity of each sentence's embedding
(the configured ``EMBEDDINGS_PROVIDER``) to the mean of them all, taken most central first
until the next would not fit in ``SUMMARY_MAX_CHARS``, then shown in the order they were said. It does not
resolve pronouns, merge or shorten sentences, or know which sentence matters to the person;
with the default ``hashing`` embeddings "central" means sharing the most words with the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import takewhile

import numpy as np
from sentencex import segment

from memoryhub.augmentation.base import Candidate, Extraction, ExtractionContext, SourceMessage
from memoryhub.infra.embeddings import EmbeddingProvider, get_provider

USER = "user"
MAX_OBJECT_CHARS = 100
SUMMARY_MAX_CHARS = 600
SUMMARY_ROLES = frozenset({"user", "assistant"})

_BREAKS = re.compile(r"\n+|(?<=;)\s+")
_CLAUSES = re.compile(
    r",?\s+(?:and|but|so)\s+(?=(?:i|i'?m|i've|my)\b)|,\s+(?=(?:i|i'?m|my)\b)"
    # "OK. I work at Acme", "Great news: I moved", "Guess what!!! I moved": sentencex keeps
    # some of these as one sentence.
    r"|[.!:]+\s+(?=(?:i|i'?m|i've|my)\b)",
    re.IGNORECASE)
_FILLER = re.compile(
    r"^(?:(?:well|so|oh|also|actually|btw|by the way|and|but|yes|yeah|hi|hello|hey|ok|okay|"
    r"fyi|anyway|now|honestly|just so you know|for the record|please)[,.!:]?\s+)+",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|would|could|might|wish|imagine|suppose|supposing|maybe|perhaps|pretend|"
    r"hypothetically|someday|one day|i'd|wanna|want to|going to|gonna|(?-i:will))\b",
    re.IGNORECASE,
)
_TAIL_WORDS = (
    r"(?:\s+(?:last|this|next)\s+(?:week|month|year|summer|winter|spring|autumn|fall)"
    r"|\s+(?:recently|now|yesterday|today|already|anymore|any more|too|as well|a lot|"
    r"so much|very much|really|though|actually|these days|nowadays))"
)
_TAIL = re.compile(_TAIL_WORDS + "+$", re.IGNORECASE)
# Where an object ends and the rest of the clause begins: "Berlin in 2020", "Lisbon with my
# wife", "Rex and he is very cute", "engineer at Google" (a job). An "and" ends it only
# before a pronoun: "Trinidad and Tobago" and "Procter and Gamble" stay whole.
_OBJECT_END = re.compile(
    r"\s+(?:(?:in|since|from|until)\s+(?:\d{4}|january|february|march|april|may|june|july|"
    r"august|september|october|november|december)\b|(?:with|since|but|for)\s+"
    r"(?:my|his|her|our|their|the|a|an|\d+|years|months|weeks|ages|a while|i|we|it)\b|"
    r"and\s+(?:i|he|she|it|they|we|he's|she's|it's|i'm|my|his|her|our)\b|because\b|"
    r"as\s+(?:an?|the|my|his|her|our|their)\b|but\b|"
    # "Lisbon for work", "Lisbon 3 years ago"
    r"for\s+(?:work|school|university|college|studies|love|good|now|fun)\b|"
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|few|several|many)\s+"
    r"(?:years?|months?|weeks?|days?)\s+ago\b)",
    re.IGNORECASE,
)
_JOB_END = re.compile(r"\s+(?:at|for|in|with|on)\s+", re.IGNORECASE)
_NAME = r"(?P<o>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
# After "my name is" (a strong marker, unlike "call me back"), a name may be typed in lower
# case: it is stored capitalised.
_ANY_CASE_NAME = r"(?P<o>[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*){0,2})"
_NOT_A_NAME = frozenset({"not", "a", "an", "the", "very", "too", "so", "kind", "hard",
                         "difficult", "long", "short", "secret", "private", "spelled", "spelt",
                         "pronounced", "written", "on", "in", "also", "still", "unusual",
                         "common", "weird", "funny", "boring"})
_NOT_CALLED = frozenset({
    "back", "later", "tomorrow", "tonight", "today", "now", "soon", "sometime", "anytime",
    "again", "asap", "maybe", "crazy", "lazy", "old", "old-fashioned", "whatever", "please",
    "anything", "first", "after", "before", "when", "if", "then", "sometimes", "never", "ever",
    "instead", "directly", "daily", "weekly", "here", "there", "too", "also", "naive",
    "stupid", "silly", "paranoid", "weird", "picky", "biased", "cynical", "skeptical",
    "sceptical", "selfish", "whenever", "anyway", "tho", "though", "pls", "plz"})
# Where a name typed in lower case ends: "my name is ana from lisbon", "ana nice to meet you".
_AFTER_NAME = frozenset({"from", "and", "but", "or", "so", "nice", "by", "here", "there", "btw",
                         "in", "at", "of", "with", "i", "im", "i'm", "the", "a", "an", "to",
                         "for", "is", "was", "thanks", "thank", "please", "hi", "hello",
                         "hey", "now", "too", "lol", "haha", "ok", "okay"})
_OBJECT = r"(?P<o>.+)"
_JOB_WORD = re.compile(
    r"(?:er|or|ist|ian|ant|ent|eer|nurse|chef|cook|pilot|student|analyst|architect|"
    r"scientist|vet|medic|clerk|guide|judge|officer|artisan|mechanic|barista|surgeon|"
    r"paramedic|secretary|cashier|coach|model|actress|waitress|poet|diplomat|midwife|nanny|"
    r"ceo|cto|cfo|coo|entrepreneur|executive|intern|apprentice|attorney|paralegal|notary|"
    r"cop|detective|sheriff|mason|priest|pastor|rabbi|imam|athlete|sysadmin|homemaker|"
    r"housewife|dev|scholar|welder|technologist)$",
    re.IGNORECASE,
)
# Words that end like a job and are not one: family, belief, habit, standing.
_NOT_A_JOB = frozenset({
    "fan", "lover", "user", "member", "customer", "beginner", "fighter", "owner", "gamer",
    "runner", "reader", "player", "other", "winner", "loser", "believer", "sucker", "morning",
    "number", "monster", "mother", "father", "brother", "sister", "daughter", "grandmother",
    "grandfather", "grandparent", "parent", "stepmother", "stepfather", "godfather",
    "godmother", "foster", "teenager", "toddler", "resident", "patient", "dependent",
    "descendant", "immigrant", "migrant", "emigrant", "foreigner", "stranger", "newcomer",
    "smoker", "drinker", "nonsmoker", "dreamer", "thinker", "worrier", "survivor", "sinner",
    "follower", "supporter", "subscriber", "introvert", "extrovert", "christian",
    "libertarian", "vegetarian", "pescatarian", "civilian", "optimist", "pessimist",
    "perfectionist", "realist", "idealist", "minimalist", "atheist", "procrastinator",
    "leftie", "lefty", "early", "night", "cancer", "scorpio", "sagittarius", "adult", "senior",
    "junior", "fresher", "twin", "partner", "person", "human", "character", "ender",
    # where people are from, and what they believe: "I'm a Canadian", "I'm a feminist"
    "canadian", "italian", "brazilian", "australian", "indian", "russian",
    "norwegian", "colombian", "peruvian", "nigerian", "egyptian", "iranian", "hungarian",
    "ukrainian", "belgian", "syrian", "armenian", "albanian", "croatian", "serbian",
    "romanian", "bulgarian", "estonian", "latvian", "lithuanian", "slovenian", "slovakian",
    "asian", "indonesian", "malaysian", "cambodian", "mongolian", "palestinian", "jordanian",
    "georgian", "bolivian", "argentinian", "ethiopian", "tanzanian", "algerian", "tunisian",
    "austrian", "haitian", "persian", "parisian", "californian", "yorker",
    "londoner", "northerner", "southerner", "midwesterner", "aquarian", "buddhist",
    "baptist", "methodist", "presbyterian", "episcopalian", "unitarian", "protestant",
    "socialist", "communist", "feminist", "capitalist", "nationalist", "environmentalist",
    "marxist", "humanitarian", "humanist",
    # habits and standing: "I'm a picky eater", "I'm a light sleeper", "I'm a homeowner"
    "eater", "sleeper", "learner", "listener", "pleaser", "talker", "shopper", "spender",
    "saver", "snorer", "overthinker", "homeowner", "renter", "tenant", "widower", "bachelor",
    "pensioner", "traveler", "traveller", "hiker", "jogger", "skier", "surfer", "swimmer",
    "climber", "dieter", "napper", "multitasker", "dweller", "passenger", "visitor", "guest",
    "viewer", "caller", "buyer", "seller", "bidder", "voter",
})
# A first word that makes the rest a trait, a past or a hope, not the job done now: "I'm a
# good cook", "I'm a former nurse", "I'm an aspiring writer" (job is single-valued: a trait
# taken for a job would invalidate the person's real one).
_NOT_A_JOB_NOW = frozenset({
    "good", "bad", "great", "terrible", "awful", "horrible", "poor", "decent", "excellent",
    "amazing", "fantastic", "pretty", "picky", "fussy", "big", "huge", "heavy", "light", "fast",
    "slow", "quick", "avid", "keen", "natural", "born", "total", "complete", "proud", "lazy",
    "messy", "sound", "restless", "careful", "careless", "former", "ex", "retired",
    "aspiring", "wannabe", "future", "would-be", "failed", "recovering", "frustrated",
})
# A pronoun is no object: "I like it" says nothing without the sentence before.
_PRONOUNS = frozenset({"it", "that", "this", "them", "those", "these", "him", "her", "you",
                       "everything", "nothing", "something", "anything", "both", "all",
                       "it here", "it there", "it a lot", "that one", "this one"})
# The diet (single-valued: "I'm vegan" ends "I'm vegetarian"), and what a diet can be kept
# with (each its own fact: "I'm vegetarian and lactose intolerant" is both).
_DIETS = ("vegetarian", "vegan", "pescatarian", "pescetarian")
_DIET_RULES = ("keto", "gluten-free", "gluten free", "lactose intolerant", "lactose-intolerant",
               "halal", "kosher")
_RELATIONS = ("wife", "husband", "partner", "son", "daughter", "dog", "cat", "boyfriend",
              "girlfriend", "mother", "father", "mom", "mum", "dad", "brother", "sister",
              "fiance", "fiancee", "baby", "kid", "child")


@dataclass(frozen=True)
class Found:
    type: str
    content: str
    predicate: str
    object: str
    confidence: float


Rule = Callable[[re.Match[str]], Found | None]


def _object(match: re.Match[str]) -> str | None:
    value = _OBJECT_END.split(match.group("o").strip(), maxsplit=1)[0]
    # The sentence's own "." goes, an abbreviation's stays: "Acme Inc. now!" -> "Acme Inc."
    value = _TAIL.sub("", value.rstrip(".!,;:")).strip().rstrip(",;:")
    if (not value or len(value) > MAX_OBJECT_CHARS or value.lower() in _PRONOUNS
            or "[redacted" in value):  # the capture policy took the object out
        return None
    return value


# Objects that are no value of a single-valued predicate, though the statement reads like one.
# A new home, employer or birthday invalidates the old one, so "I live in the moment" must not
# end the person's life in Lisbon, nor "I work at night" their job at Acme.
_NOT_A_HOME = re.compile(
    # in lower case: "I live in Hope" (Arkansas) or "in Nice" is a place
    r"(?-i:(?:the\s+)?(?:moment|present|past|future|now|fear|hope|denial|peace|harmony|luxury|"
    r"poverty|comfort|misery|sin|style|silence|dreams?|my head|my own (?:world|head|bubble)|"
    r"(?:a|my own|our own) (?:bubble|dream|world)|the (?:real )?world|reality))"
    r"(?:\s+(?:of|that|for|and|with|about)\b.*)?$|"  # "fear of spiders", "hope that ..."
    # a dwelling without its place: "I live in a flat", "I moved to a new apartment"
    r"(?:an?|my|our)(?:\s+[\w'-]+){0,2}\s+(?:flat|apartment|house|home|condo|studio|"
    r"dorm|bungalow|cottage|basement|attic|tent|van|caravan|trailer|houseboat|loft|room|"
    r"place|building|neighbou?rhood|area|street)$|"
    # not where one lives: "I moved to a different team", "to the new office", "to the cloud"
    # (in lower case: "the New Forest" is a place)
    r"(?-i:(?:an?|the)\s+(?:different|new|other|next|same|better|worse|bigger|smaller|"
    r"cheaper)\b.*)|(?-i:another\b.*)|"
    r"(?-i:the\s+(?:cloud|office|team|company|department|project|front|back|top|bottom|side|"
    r"left|right|next level|dark side|beat)\b.*)",
    re.IGNORECASE,
)
_NOT_AN_EMPLOYER = re.compile(
    r"(?:night|nights|home|weekends?|the weekends?|the moment|the minute|the same time|"
    r"times|first|last|least|most|once|myself|ourselves|yourself|fun|free|a living|money|"
    r"pay|peanuts|cash|food|hours|days|weeks|months|years|ages|now|a while|long|love|"
    r"nothing|minimum wage|a change|practice|it|that|this|them|him|her|you|"
    r"(?-i:(?:the\s+)?same\b.*))"  # "at the same company as my wife"
    # "I work at home on Fridays", "for myself most days"; not "Home Depot"
    r"(?:\s+(?:on|in|at|and|or|for|during|every|each|most|some|from|with|to|so|because|"
    r"now|too|sometimes|mostly|usually)\b.*)?$",
    re.IGNORECASE,
)
# A day said relative to today is no birthday: "my birthday is tomorrow" (or "on Friday").
_NOT_A_BIRTHDAY = re.compile(
    r"(?:on\s+)?(?:today|tomorrow|tonight|yesterday|soon|coming(?: up)?|around the corner|"
    r"close|near|over|(?:next|this|last)\b.*|in\s+(?:a|an|one|two|three|four|five|six|"
    r"a few|few|\d+)\b.*|(?:the )?day after tomorrow|"
    r"(?:an?\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day)$",
    re.IGNORECASE,
)
_NOT_THE_VALUE = {"home": _NOT_A_HOME, "employer": _NOT_AN_EMPLOYER, "birthday": _NOT_A_BIRTHDAY}


# "I" and "my" are the user: in an object they are the user's too, and a fact says so in the
# third person ("I love my dog" -> "User loves their dog", not "User loves my dog"). Typed
# in lower case: "I like My Chemical Romance" names a band.
_FIRST_PERSON = re.compile(r"\b(?:my|me|mine|myself)\b")
_THIRD_PERSON = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}


def _the_users(value: str) -> str:
    return _FIRST_PERSON.sub(lambda word: _THIRD_PERSON[word.group(0)], value)


def _profile(predicate: str, template: str, confidence: float = 0.9) -> Rule:
    refused = _NOT_THE_VALUE.get(predicate)

    def found(match: re.Match[str]) -> Found | None:
        value = _object(match)
        if value is None or (refused is not None and refused.match(value)):
            return None
        if predicate in ("diet", "diet_rule"):
            value = value.lower()  # "I'M VEGAN": a diet is a word, not a name
        value = _the_users(value)
        return Found("profile", template.format(value), predicate, value, confidence)
    return found


def _preference(predicate: str, verb: str | None = None) -> Rule:
    def found(match: re.Match[str]) -> Found | None:
        value = _object(match)
        if value is None:
            return None
        value = _the_users(value)
        said = verb or match.group("v").lower() + "s"
        return Found("preference", f"User {said} {value}", predicate, value, 0.8)
    return found


def _name(match: re.Match[str]) -> Found | None:
    """A name after "my name is": its capitalised words ("Ana Silva from Lisbon"), or words
    typed in lower case up to one that is no name's ("ana from lisbon"), stored capitalised."""
    words = match.group("o").split()
    if words[0].lower() in _NOT_A_NAME:
        return None
    if words[0][:1].isupper():
        kept = list(takewhile(lambda word: word[:1].isupper(), words))
    else:
        kept = [w[:1].upper() + w[1:]
                for w in takewhile(lambda word: word.lower() not in _AFTER_NAME, words)]
    value = " ".join(kept).strip("'-")
    if not value:
        return None
    return Found("profile", f"User's name is {value}", "name", value, 0.9)


def _called(match: re.Match[str]) -> Found | None:
    """"call me bob" (one word, lower case) is a name; "call me later" is not."""
    if match.group("o").lower() in _NOT_CALLED:
        return None
    return _name(match)


def _job(match: re.Match[str]) -> Found | None:
    value = _object(match)
    if value is not None:
        value = _JOB_END.split(value, maxsplit=1)[0].strip()  # "a nurse at the city hospital"
    if not value or len(value.split()) > 3:
        return None
    words = value.lower().split()
    if (not _JOB_WORD.search(words[-1]) or words[-1] in _NOT_A_JOB
            or words[0] in _NOT_A_JOB_NOW or words[0].startswith("ex-")):  # "an ex-nurse"
        return None
    article = "an" if value[:1].lower() in "aeiou" else "a"
    return Found("profile", f"User works as {article} {value}", "job", value, 0.8)


def _relation(match: re.Match[str]) -> Found | None:
    value = _object(match)
    if value is None:
        return None
    relation = match.group("rel").lower()
    return Found("triple", f"User's {relation} is called {value}", relation, value, 0.8)


_I = r"i(?:\s+(?:really|absolutely|also|do|truly|totally|still))?"
RULES: list[tuple[re.Pattern[str], Rule]] = [
    (re.compile(r"^(?i:my name is|my name's|i am called|i'?m called|i go by)\s+"
                + _ANY_CASE_NAME, re.IGNORECASE), _name),
    (re.compile(r"^(?i:call me)\s+" + _NAME), _profile("name", "User's name is {}")),
    (re.compile(r"^(?i:call me)\s+(?P<o>[^\W\d_][\w'-]*)$"), _called),
    (re.compile(r"^(?:i live in|i'?m living in|i am living in|i(?:'ve| have) (?:been )?liv(?:ed|ing) in|i (?:just |recently )?moved to|"
                r"i've (?:just |recently )?moved to|i have moved to|i relocated to)\s+" + _OBJECT,
                re.IGNORECASE), _profile("home", "User lives in {}")),
    (re.compile(r"^i(?: work as| am working as|'?m working as)\s+(?:an?\s+)?" + _OBJECT,
                re.IGNORECASE), _job),
    (re.compile(r"^i(?: work| am working|'?m working)\s+(?:at|for)\s+" + _OBJECT, re.IGNORECASE),
     _profile("employer", "User works at {}")),
    (re.compile(r"^i(?:'?m| am) allergic to\s+" + _OBJECT, re.IGNORECASE),
     _profile("allergic_to", "User is allergic to {}")),
    (re.compile(r"^i(?:'?m| am)\s+(?:an?\s+)?(?:strict\s+)?(?P<o>" + "|".join(_DIETS) + r")"
                + _TAIL_WORDS + "*$", re.IGNORECASE), _profile("diet", "User is {}")),
    (re.compile(r"^i(?:'?m| am)\s+(?:strict(?:ly)?\s+)?(?P<o>" + "|".join(_DIET_RULES) + r")"
                + _TAIL_WORDS + "*$", re.IGNORECASE), _profile("diet_rule", "User is {}")),
    (re.compile(r"^i(?:'?m| am)\s+an?\s+" + _OBJECT, re.IGNORECASE), _job),
    (re.compile(r"^i no longer (?:like|love|enjoy)\s+" + _OBJECT, re.IGNORECASE),
     _preference("no_longer_likes", "no longer likes")),
    (re.compile(r"^i (?:don't|do not|dont) (?:like|love|enjoy)\s+(?P<o>.+?)\s+any\s?more$",
                re.IGNORECASE), _preference("no_longer_likes", "no longer likes")),
    (re.compile(r"^i (?:really\s+)?(?:don't|do not|dont) (?:really\s+)?(?:like|enjoy|love)\s+"
                + _OBJECT, re.IGNORECASE), _preference("dislikes", "dislikes")),
    (re.compile(r"^i (?:really\s+)?(?:hate|dislike|detest|can't stand|cannot stand)\s+" + _OBJECT,
                re.IGNORECASE), _preference("dislikes", "dislikes")),
    (re.compile(rf"^{_I}\s+(?P<v>prefer)\s+" + _OBJECT, re.IGNORECASE),
     _preference("prefers")),
    (re.compile(rf"^{_I}\s+(?P<v>like|love|enjoy|adore)\s+" + _OBJECT, re.IGNORECASE),
     _preference("likes")),
    (re.compile(r"^my (?P<rel>" + "|".join(_RELATIONS) + r")(?:'s name is| is called| is named|"
                r"'s called| goes by)\s+" + _OBJECT, re.IGNORECASE), _relation),
    (re.compile(r"^(?i:my) (?P<rel>(?i:" + "|".join(_RELATIONS) + r")) (?i:is)\s+" + _NAME + "$"),
     _relation),
    (re.compile(r"^(?:my birthday is|my birthday's|i was born on)\s+(?:on\s+)?" + _OBJECT,
                re.IGNORECASE), _profile("birthday", "User's birthday is {}")),
]


def sentences(text: str) -> Iterator[str]:
    """The sentences of a text (``sentencex``, then line breaks and ``;``), stripped."""
    for line in _BREAKS.split(text):
        for sentence in segment("en", line):
            if sentence.strip():
                yield sentence.strip()


def clauses(text: str) -> Iterator[str]:
    """The statements of a message: sentences, then clauses that start with I or my;
    questions and hypotheticals left out."""
    for sentence in sentences(text):
        if not sentence or sentence.endswith("?"):
            continue
        hypothetical = False
        for clause in _CLAUSES.split(sentence):
            # A hypothetical clause makes the ones after it hypothetical too ("If I move to
            # Paris, I live ..."), not the ones before ("I live in Lisbon and I will ...").
            hypothetical = hypothetical or bool(_HYPOTHETICAL.search(clause))
            clause = _FILLER.sub("", clause.strip()).strip().rstrip(".!;")
            if clause and not hypothetical:
                yield clause.replace("\u2019", "'")


def statement_facts(clause: str) -> Found | None:
    """The fact one clause states, by the first rule that matches it, or None."""
    for pattern, rule in RULES:
        match = pattern.match(clause)
        if match is not None:
            return rule(match)
    return None


def extractive_summary(previous: str, messages: Sequence[SourceMessage],
                       embeddings: EmbeddingProvider, *, limit: int = SUMMARY_MAX_CHARS) -> str | None:
    """The most central sentences of the previous summary and the new messages, at most
    ``limit`` characters, in the order they were said; None when the messages add none."""
    new = [s for m in messages if m.role in SUMMARY_ROLES for s in sentences(m.content)]
    if not new:
        return None
    pool = list(dict.fromkeys([*sentences(previous), *new]))  # one of each, first kept
    vectors = np.asarray(embeddings.embed(pool), dtype=np.float64)
    centre = vectors.mean(axis=0)
    centrality = vectors @ centre
    chosen: list[int] = []
    used = -1  # the join's spaces: one fewer than the sentences
    for index in sorted(range(len(pool)), key=lambda i: (-centrality[i], i)):
        if used + 1 + len(pool[index]) > limit:
            break  # the most central k that fit: no less central sentence fills the gap
        chosen.append(index)
        used += 1 + len(pool[index])
    if not chosen:  # every sentence is longer than the limit: the most central, cut
        best = pool[int(np.argmax(centrality))]
        return best[: limit - 1].rstrip() + "\u2026"
    return " ".join(pool[i] for i in sorted(chosen))


class RulesExtractor:
    name = "rules"
    wants_known_facts = False

    def __init__(self, embeddings: EmbeddingProvider | None = None) -> None:
        self._embeddings = embeddings

    def extract(self, messages: Sequence[SourceMessage], context: ExtractionContext) -> Extraction:
        return Extraction(
            candidates=self.candidates(messages),
            summary=extractive_summary(context.previous_summary, messages,
                                       self._embeddings or get_provider()),
        )

    def candidates(self, messages: Sequence[SourceMessage]) -> list[Candidate]:
        candidates = []
        for message in messages:
            if message.role != "user":
                continue
            for clause in clauses(message.content):
                found = statement_facts(clause)
                if found is not None:
                    candidates.append(Candidate(
                        type=found.type, content=found.content, message_id=message.id,
                        valid_at=message.created_at, subject=USER, predicate=found.predicate,
                        object=found.object, confidence=found.confidence,
                    ))
        return candidates
