"""Deterministic graph projection: a GRAPH_SCHEMA proposal from event text, no model.

Precision over recall. People come from event participants; places, organisations,
projects and tools only from patterns that rarely misfire (a verb such as "moved to" or
"works at" before a capitalised name, a company suffix, "Project X", or a short list of
well-known cities and software). Facts and edges attach to the sentence's named
participant, else to the event's first participant. Every record cites the event it
came from, and every name cites its events as provenance.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cached_property, lru_cache
from typing import Any

from core import lexicon
from core.search.window import CONDITIONAL
from core.providers.offline_events import (
    DOSE,
    FEMININE_KIN,
    MASCULINE_KIN,
    INTERJECTIONS,
    MEDICINE,
    PARTICLE_WORDS,
    WEB_SUFFIX,
    AGE_WORD_ALTERNATION,
    time_for,
)
from core.text import ABBREVIATIONS, NUMBER_WORDS, GatedPattern, search_at_end, without_time_zones
from core.timeparse import might_contain_time
from core.vocab import COUNTED_FACT_KEYS
from core.timeutil import parse_timestamp

MAX_NODES = 24
MAX_EDGES = 32

# Participants that are not people we can name.
_PRONOUNS = lexicon.words("unnamed_participants")

# Peoples and regions as adjectives ("Irish music", "Canadian Rockies"): capitalised, never a person. (The
# event reader keeps them: "German Shepherd" is one name there, a breed here.)
_DEMONYMS = lexicon.words("demonyms")
# Capitalised words that never start or end an entity name.
_NOT_NAMES = frozenset(list(lexicon.ordered("not_names_graph")) + list(_DEMONYMS) + list(INTERJECTIONS))

_KNOWN_PLACES = lexicon.ordered("places")

# Software and services: matched when capitalised as here; the second list also in any case.
_KNOWN_TOOLS = lexicon.ordered("tools")
_ANY_CASE_TOOLS = frozenset(t.casefold() for t in lexicon.ordered("tools_any_case"))

_ROLE_NOUNS = lexicon.words("roles")
_ROLE_SKIP = frozenset("fan lot bit little huge big former ex retired aspiring wannabe".split())
# Two-word roles whose head noun is too vague on its own.
_ROLE_PHRASES = frozenset({"social worker", "care worker", "case worker", "youth worker", "health worker"})

_DOG_BREEDS = lexicon.ordered("dog_breeds")
_PETS = {
    **{breed: "dog" for breed in _DOG_BREEDS},
    "dog": "dog",
    "dogs": "dog",
    "puppy": "dog",
    "cat": "cat",
    "cats": "cat",
    "kitten": "cat",
    "parrot": "parrot",
    "hamster": "hamster",
    "rabbit": "rabbit",
    "bunny": "rabbit",
    "turtle": "turtle",
    "tortoise": "tortoise",
    "horse": "horse",
    "guinea pig": "guinea pig",
    "goldfish": "goldfish",
    "snake": "snake",
    "lizard": "lizard",
    "ferret": "ferret",
}

_NAME = rf"[A-Z][\w&'’]*(?:-[\w&'’]+)*{WEB_SUFFIX}?"
_CAPS = rf"{_NAME}(?:\s+{_NAME}){{0,3}}"
_TECH_WORDS = re.compile(
    r"\b(?:service|database|db|app|stack|framework|library|tool|code|repo|backend|frontend|server|api|"
    r"deploy\w*|pipeline|editor|platform|cloud|cluster|schema|queue|stack)\b",
    re.IGNORECASE,
)

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;。！？；])" + "".join(rf"(?<!\b{a}\.)" for a in ABBREVIATIONS) + r"\s+|\n+")
_KNOWN_PLACE_RE = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(p) for p in sorted(_KNOWN_PLACES, key=len, reverse=True)) + r")(?![\w-])"
)
_KNOWN_TOOL_RE = re.compile(
    r"(?<![\w.-])(" + "|".join(re.escape(t) for t in sorted(_KNOWN_TOOLS, key=len, reverse=True)) + r")(?![\w-])",
)
_ANY_CASE_TOOL_RE = re.compile(
    r"(?<![\w.-])(" + "|".join(re.escape(t) for t in sorted(_ANY_CASE_TOOLS, key=len, reverse=True)) + r")(?![\w-])",
    re.IGNORECASE,
)
_TOOL_CANON = {t.casefold(): t for t in _KNOWN_TOOLS}
_PLACE_CANON = {p.casefold(): p for p in _KNOWN_PLACES}

# Patterns that may start at every word but hold one of a few words are gated by them (GatedPattern).
_LIVE_RE = GatedPattern(
    re.compile(rf"\b(?:live|lives|living|based|settled|reside|resides|residing)\s+(?:in|near)\s+({_CAPS})"),
    ("liv", "based", "settled", "resid"),
)
_LIVED_RE = re.compile(rf"\blived\s+in\s+({_CAPS})")
_MOVE_RE = GatedPattern(
    re.compile(rf"\b(?:moved|moving|move|relocated|relocating|relocate)\s+(?:back\s+)?to\s+({_CAPS})"),
    ("mov", "relocat"),
)
# A residence left: "moved out of Berlin", "relocated from Berlin to Oslo" (Oslo is the new one).
_MOVE_FROM_RE = GatedPattern(
    re.compile(
        rf"\b(?:moved|moving|moves|move|relocated|relocating|relocates|relocate)\s+(?:out\s+of|away\s+from|from)\s+"
        rf"(?P<old>{_CAPS})(?:\s+(?:to|into)\s+(?P<new>{_CAPS}))?"
    ),
    ("mov", "relocat"),
)
_VISIT_RE = re.compile(
    rf"\b(?:visit|visits|visited|visiting|toured|trip\s+to|travel(?:l?ed|l?ing|s)?\s+to|flew\s+to|fly\s+to|"
    rf"flying\s+to|heading\s+to|headed\s+to|vacation\s+in|holiday\s+in|went\s+to|going\s+to|go\s+to)\s+({_CAPS})"
)
# Verbs after which an unknown capitalised name is still a place ("visited" may be a person).
_STRICT_VISIT = re.compile(r"^(?:trip|travel|flew|fly|flying|head|vacation|holiday)", re.I)
_FROM_RE = re.compile(
    rf"(?:\bI'm|\bI\s+am|\boriginally|\bhails)\s+from\s+({_CAPS})|\b(?:grew\s+up|born|raised)\s+in\s+({_CAPS})"
)
# "is from X" / "came from X" name a place only when X is a known one ("the gift came from Sarah").
_FROM_WEAK_RE = re.compile(rf"\b(?:is|are|comes?|came)\s+from\s+({_CAPS})")
_CITY_STATE_RE = re.compile(rf"\b(?:in|near|from|to|at)\s+({_NAME}(?:\s+{_NAME})?),\s+({_NAME}(?:\s+{_NAME})?)")

_PLACE_NOUNS = lexicon.ordered("place_nouns")
_PLACE_NOUN_RE = re.compile(rf"\b((?:{_NAME}\s+){{1,2}}(?:{'|'.join(_PLACE_NOUNS)}))\b")
# "Quinta da Regaleira", "Chafariz do Dentro": one name with a lower-case particle inside.
# The name particles, and those of dishes and places ("à Brás", "alla Norma").
_PARTICLES = rf"(?:{'|'.join(sorted(PARTICLE_WORDS | {'à', 'au', 'aux', 'alla'}))})"
_PARTICLE_BEFORE_RE = re.compile(rf"\b({_NAME})\s+{_PARTICLES}\s+(?=[A-Z])")
_PARTICLE_AFTER_RE = re.compile(rf"(?<=\s){_PARTICLES}\s+({_NAME})")
# ... unless the sentence says it is someone: "lunch with Ana de Souza", "my manager Ana de Souza",
# "Ana de Souza said", "Ana de Souza, my new manager", or a he/she later in the sentence.
_PARTICLE_NAME_RE = re.compile(rf"\b{_NAME}(?:(?:\s+{_PARTICLES}){{1,2}}\s+{_NAME})+")
_PERSON_BEFORE_RE = re.compile(
    r"\b(?:with|met|meet|meeting|called|named|told|asked|thanked|hired|by|friend|manager|boss|colleague|coworker|"
    r"partner|wife|husband|sister|brother|mother|father|mom|mum|dad|teacher|doctor|neighbou?r|cousin|aunt|uncle)"
    r"\s+$",
    re.IGNORECASE,
)
PERSON_BEFORE_REACH = 9  # its longest word: "colleague", "neighbour" (search_at_end)
_PERSON_AFTER_RE = re.compile(
    r"^(?:['’]s\s+(?:new\s+)?(?:wife|husband|partner|birthday|kids?|children|son|daughter)\b|,\s+(?:my|our|his|her|their)\b|"
    r"\s+(?:said|says|told|asked|thinks|wants|is\s+my|was\s+my)\b|.*\b(?:she|he)\b)",
    re.IGNORECASE,
)


def _people_with_particles(text: str) -> list[tuple[int, int]]:
    """Spans of the names with particles that the sentence shows to be people."""
    return [
        m.span()
        for m in _PARTICLE_NAME_RE.finditer(text)
        if search_at_end(_PERSON_BEFORE_RE, text, m.start(), PERSON_BEFORE_REACH)
        or _PERSON_AFTER_RE.match(text[m.end() :])
    ]


# Right before a person's name these are unlikely: "the Utrecht office", "in Utrecht", "a new Impact section".
# A possessive counts like "my": cards rewrite "my Utrecht office" as "Maya's Utrecht office".
_NOT_BEFORE_PERSON = re.compile(
    r"(?:\b(?:the|a|an|new|our|my|your|their|its|this|that|these|those|in|at|near|via|around|through|outside|inside|"
    # "Easter Sunday Belém": an itinerary
    r"out\s+of|into|across|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)|\w['’]s)\s+$",
    re.IGNORECASE,
)
_ARTICLE_BEFORE = re.compile(r"\b(?:the|a|an)\s+$", re.IGNORECASE)
ARTICLE_BEFORE_REACH = 3
# Words that end an organisation's name ("Northwind Freight", "Kestrel Logistics", "Acme Inc").
_ORG_SUFFIXES = "|".join(lexicon.ordered("org_suffixes"))
_ORG_SUFFIX_RE = re.compile(rf"\b((?:{_NAME}\s+){{0,3}}{_NAME})\s+({_ORG_SUFFIXES})\b\.?")
_ORG_SUFFIX_WORDS = frozenset(_ORG_SUFFIXES.split("|"))
_UNIVERSITY_OF_RE = GatedPattern(re.compile(rf"\bUniversity\s+of\s+({_NAME}(?:\s+{_NAME}){{0,2}})"), ("university",))
_LEGAL_SUFFIXES = frozenset({"Inc", "Ltd", "LLC", "Corp", "Corporation", "Co"})
# An employer left: "resigned from Acme", "was laid off by Beta", "retired from Initech". After "left" or
# "quit" only a name with a company suffix or a web address is an employer ("left Acme Inc", "left
# Booking.com"; "left Paris", "left Maya a note").
_LEAVE_ORG_RE = GatedPattern(
    re.compile(
        rf"\b(?:resign(?:ed|s|ing)?|retir(?:ed|es|ing)|(?:was|were|got|been|being)\s+(?:laid\s+off|fired|let\s+go))\s+"
        rf"(?:from|by|at)\s+(?:the\s+)?(?P<org>{_CAPS})"
        rf"|\b(?:left|leaving|leaves|quit|quits|quitting)\s+(?:the\s+)?(?P<org2>(?:{_NAME}\s+){{0,3}}"
        rf"(?:{_ORG_SUFFIXES})|[A-Z][\w&'’-]*{WEB_SUFFIX})\b"  # a web address names a company too
    ),
    ("resign", "retir", "laid", "fired", "let", "left", "leav", "quit"),
)
_WORK_AT_RE = re.compile(
    rf"\b(?P<verb>works?|working|worked|employed|interning|interns?|job|position|started|hired)\s+"
    rf"(?:at|for|by)\s+(?:the\s+)?(?P<org>{_CAPS})"
    rf"|\b(?P<joined>joined|joins|joining)\s+(?P<org2>{_CAPS})"
    # "now I'm at Northwind Freight as a data lead": being somewhere as a role is working there
    rf"|\b(?:is|am|'m|are)\s+(?:now\s+)?(?:at|with)\s+(?:the\s+)?(?P<org3>{_CAPS})\s+as\s+(?:a|an)\s"
)
# A school someone starts at or goes to is attended, not worked at ("Ivy started at the Montessori school").
_SCHOOL_AFTER = re.compile(
    r"\s*(?:school|kindergarten|preschool|daycare|nursery|academy|college|university)\b", re.IGNORECASE
)
_PAST_WORK = re.compile(r"\b(?:used\s+to|former(?:ly)?|previously|left|quit|retired\s+from)\b", re.IGNORECASE)

# Another name someone goes by: "please call me Mia" (a card reads "please call Maya Mia"), "Tomás goes
# by Tom", "Ivy's nickname is Bean". The other name is an alias of that person, not a second person.
_GOES_BY_RE = GatedPattern(
    re.compile(
        rf"\b(?i:please|you\s+can|just|now)\s+call\s+(?P<who>{_NAME})\s+(?P<alias>{_NAME})\b"
        rf"|\b(?P<who2>{_NAME})\s+(?:goes|go)\s+by\s+(?P<alias2>{_NAME})\b"
        rf"|\b(?P<who3>{_NAME})['’]s\s+nickname\s+is\s+(?P<alias3>{_NAME})\b"
    ),
    ("call", "by", "nickname"),
)


def _goes_by(m: re.Match[str]) -> tuple[str, str]:
    """(who, the other name) of a ``_GOES_BY_RE`` match."""
    return next((m.group(f"who{i}"), m.group(f"alias{i}")) for i in ("", "2", "3") if m.group(f"who{i}"))


# What one plays, watches, buys or wears is a thing (a game, a show, a brand), not someone ("played with
# Max" is someone, and stays out of this).
_THING_OBJECT_RE = GatedPattern(
    re.compile(
        rf"\b(?i:play|plays|played|playing|watch|watches|watched|watching|binge[ -]?watched|bought|buy|buying|"
        rf"ordered|wear|wears|wearing|wore|drink|drinks|drinking|drank|downloaded|installed)\s+"
        rf"(?:(?i:a|an|the|some|my|our|his|her|their|new|more|lots\s+of|a\s+lot\s+of)\s+)?({_CAPS})"
    ),
    ("play", "watch", "bought", "buy", "order", "wear", "wore", "drink", "drank", "download", "install"),
)
# A name a thing noun follows or introduces ("a big Valorant tournament", "this game Catan", "brands like
# Nike", "a town called Woodhaven"), or one in quotes ("'Connected LGBTQ Activists'"), names no one.
_THING_NOUNS = "|".join(lexicon.ordered("thing_nouns"))
_THING_RE = GatedPattern(
    re.compile(
        rf"\b({_CAPS})\s+(?i:{_THING_NOUNS})\b"
        rf"|\b(?i:{_THING_NOUNS})\s+(?i:called\s+|named\s+|like\s+)?({_CAPS})"
        rf"|['‘\"“]({_CAPS}(?:\s+[A-Z]+)*(?:\s+{_CAPS})?)['’\"”]"
    ),
    (*_THING_NOUNS.split("|"), "'", '"'),
)
# A place or thing a sentence names by what it is: "Woodhaven, a small town in the Midwest", "my old area,
# West County", "a location called Whispering Falls", "the game was called Counter-Strike", "king of Gondor";
# an event's name: "the Pride fest".
_PLACE_KINDS = "town|city|village|hometown|suburb|county|state|country|region|district|neighbou?rhood|area|island"
_NAMED_AS_RE = GatedPattern(
    re.compile(
        rf"\b({_CAPS}),\s+(?:a|an|the|my|our|his|her|their)\s+(?:(?:small|little|big|tiny|quiet|beautiful|lovely|"
        rf"charming|old|historic|coastal|seaside|mountain|rural|remote|nearby)\s+){{0,2}}(?:{_PLACE_KINDS})\b"
        rf"|\b(?:{_PLACE_KINDS}),\s+({_CAPS})(?=\s*[,.!?;)]|\s+too\b|\s*$)"
        rf"|\b(?:location|place|spot|area|park|trail|beach|lake|{_PLACE_KINDS}|(?i:{_THING_NOUNS}))\s+"
        rf"(?:(?:is|was)\s+)?(?:called|named)\s+({_CAPS})"
        rf"|\b(?:king|queen|prince|princess|lord|lady|duke|emperor|ruler|mayor|governor)\s+of\s+(?:the\s+)?({_CAPS})"
        rf"|\b({_CAPS})\s+(?i:fest|festival|parade|month)\b"
        # who sponsors or signs a deal is a company: "a deal with Gatorade", "sponsored by Nike"
        rf"|\b(?:(?:deals?|sponsorships?|endorsements?)\s+(?:with|from)|sponsored\s+by)\s+({_CAPS}(?:\s+and\s+{_CAPS})?)"
        # every name of a list a thing noun introduces: "brands like Nike and Under Armour"
        rf"|\b(?i:{_THING_NOUNS})\s+(?:like|such\s+as|including)\s+({_CAPS}(?:(?:,\s+|,?\s+(?:and|or)\s+){_CAPS})+)"
    ),
    (
        "town",
        "city",
        "village",
        "suburb",
        "county",
        "state",
        "country",
        "region",
        "district",
        "neighbo",
        "area",
        "island",
        "called",
        "named",
        "king",
        "queen",
        "prince",
        "lord",
        "lady",
        "duke",
        "emperor",
        "ruler",
        "mayor",
        "governor",
        "fest",
        "parade",
        "month",
        "deal",
        "sponsor",
        "endorsement",
        "like",
        "such",
        "including",
    ),
)
# A title in quotes, small words and all: '"A Dance with Dragons"' names a book, not its words' people.
_QUOTED_TITLE_RE = re.compile(
    rf"[‘\"“]((?:{_NAME})(?:\s+(?:{_NAME}|of|the|a|an|and|with|in|on|to|for|at|from|by)){{1,8}})[’\"”]"
)
# Capitalised words joined by "of (the)": titles and places ("Lord of the Rings", "Cliffs of Moher",
# "Bank of America"), whose parts are no people.
_TITLE_OF_RE = re.compile(rf"\b({_NAME})\s+of\s+(?:the\s+)?({_NAME})")
_TEAM_RE = GatedPattern(
    re.compile(rf"\bthe\s+({_CAPS})\s+(?:team|squad|group|department|crew|guild)\b"),
    ("team", "squad", "group", "department", "crew", "guild"),
)
_PROJECT_RE = GatedPattern(
    re.compile(rf"\b(?P<surface>Project\s+(?P<name>{_NAME}(?:\s+{_NAME})?))|\bthe\s+(?P<name2>{_CAPS})\s+project\b"),
    ("project",),
)
_WORKS_ON_VERB = re.compile(
    r"\b(?:work(?:s|ed|ing)?\s+on|lead(?:s|ing)?|led|manag(?:e|es|ed|ing)|run(?:s|ning)?|own(?:s|ing)?|"
    r"build(?:s|ing)?|built|start(?:s|ed|ing)?|join(?:s|ed|ing)?|launch(?:es|ed|ing)?|ship(?:s|ped|ping)?|"
    r"develop(?:s|ed|ing)?|contribut(?:e|es|ed|ing)\s+to)\b",
    re.IGNORECASE,
)

_USE_RE = re.compile(
    rf"\b(?P<verb>use|uses|using|used|switched\s+to|switching\s+to|switch\s+to|migrated\s+to|migrating\s+to|"
    rf"migrate\s+to|moved\s+to|moving\s+to|tried|trying|adopted|adopting|installed|started\s+using|"
    # "switched from Jira to Linear": the tool left is ended by _LEFT, the one taken is used
    rf"(?:switch(?:ed|es|ing)?|migrat(?:e|ed|es|ing))\s+(?:over\s+)?from\s+[\w.+#-]+(?:\s+[\w.+#-]+)?\s+to)\s+"
    rf"(?P<tool>{_CAPS})"
)
# The uses that leave no doubt the object is a thing, not someone ("tried Maria's lasagna",
# "moved to Denver" do): what they name is kept out of the people.
_PLAIN_USE = re.compile(
    r"(?:use|uses|using|used|started\s+using|adopted|adopting|installed|switch\w*|migrat\w*)\b", re.IGNORECASE
)
# A use stated inside a clause that denies or replaces it ("stopped using Jenkins", "instead of
# switching to Dagster", "uses Dagster now, not Airflow") is not a current use. The clause is
# what follows the last punctuation mark or joining word before the mention.
_CLAUSE_START = re.compile(r"(?:[.;,:!?()]|\b(?:but|and|so|then|while|whereas|although|though|yet)\b)", re.I)
_DENIAL = re.compile(
    r"\b(?:not|never|no\s+longer|nor|stop(?:s|ped|ping)?|quit(?:s|ting)?|drop(?:s|ped|ping)?|"
    r"abandon\w*|ditch\w*|(?:gave|give|gives|giving)\s+up(?:\s+on)?|got\s+rid\s+of|avoid\w*|"
    r"instead\s+of|rather\s+than|without|against|\w+n't|cannot)\b",
    re.I,
)


# Denials that say the thing held until then: "dropped Jenkins" ends a use, "never used" does not.
_ENDED = re.compile(
    r"\b(?:no\s+longer|stop(?:s|ped|ping)?|quit(?:s|ting)?|drop(?:s|ped|ping)?|abandon\w*|"
    r"ditch\w*|(?:gave|give|gives|giving)\s+up(?:\s+on)?|got\s+rid\s+of)\b",
    re.I,
)


def _part_before(start: re.Pattern, text: str, at: int) -> str:
    """What comes before position ``at`` in its part of ``text``, parts beginning where ``start`` matches."""
    before = text[:at]
    starts = [m.end() for m in start.finditer(before)]
    return before[starts[-1] if starts else 0 :]


def _clause_before(text: str, at: int) -> str:
    """The part of the clause holding position ``at`` that comes before it."""
    return _part_before(_CLAUSE_START, text, at)


# Where a new statement begins, for a verb that reaches over commas and "and" ("uses Vim, Git and
# Docker") but not into the next statement ("switched to Obsidian, so give it to me as Markdown").
_STATEMENT_START = re.compile(r"[.;:!?()]|\b(?:but|so|then|because|while|whereas|although|though|yet)\b", re.I)


def _statement_before(text: str, at: int) -> str:
    """The part of the statement holding position ``at`` that comes before it."""
    return _part_before(_STATEMENT_START, text, at)


def _denial(text: str, at: int) -> str | None:
    """How the clause holding position ``at`` denies what is stated there: "ended" (it held
    once: "no longer works at", "stopped using"), "denied" (any other negation) or None."""
    clause = _clause_before(text, at)
    if not _DENIAL.search(clause):
        return None
    return "ended" if _ENDED.search(clause) else "denied"


# A tool left: "switched from Jenkins", "migrating away from Airflow", "replaced Jenkins", "dropped Jira".
_LEFT = re.compile(
    r"\b(?:(?:switch\w*|migrat\w*|mov(?:e|ed|es|ing))\s+(?:away\s+)?from|replac(?:e|es|ed|ing)|"
    r"swap(?:s|ped|ping)?|drop(?:s|ped|ping)?|ditch\w*|abandon\w*|"
    r"(?:gave|give|gives|giving)\s+up(?:\s+on)?|got\s+rid\s+of)\s+$",
    re.IGNORECASE,
)
# ... and the one it was left for: "replaced Jenkins with GitLab", "ditched Jira for Linear".
_TAKEN_FOR = re.compile(
    r"\b(?:replac\w*|swap\w*|ditch\w*|drop\w*)\s+\S+(?:\s+\S+)?\s+(?:with|for|by)\s+$", re.IGNORECASE
)
# What a conditional sentence may still state: a plan is one.
_PLAN_KEYS = frozenset({"plans_to_visit", "plans_to"})
_ZH_USE_RE = re.compile(
    r"(?P<neg>不再|不|没有?|别)?\s*(?:使用|用|改用|换用|在用|转用|换成|改成)\s*(?P<tool>[A-Z][\w.+#-]*(?:\s+[A-Z][\w.+#-]*)?)"
)
# "我对青霉素过敏", "Ivy 对花生过敏": an allergy, held by the clause's subject.
_ZH_ALLERGY_RE = re.compile(
    r"(?P<neg>不|没有?)?\s*对\s*(?P<what>(?:(?!不|没)[\u4e00-\u9fff\w]){1,12}?)\s*(?:严重|有点|非常)?过敏"
)
_USE_VERB = re.compile(
    r"\b(?:use|uses|using|used|switch\w*|migrat\w*|tried|trying|adopt\w*|install\w*)\b", re.IGNORECASE
)

_ROLE_FIRST_RE = re.compile(
    r"\b(?:I'm|I\s+am|I\s+work\s+as|I\s+worked\s+as|I\s+became|my\s+job\s+is|I'm\s+working\s+as)"
    r"\s+(?:(?:now|currently|officially|finally)\s+)?(?:a|an)\s+"  # "I'm now a data architect": a new role
    r"(?P<role>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2})"
)
# "I got promoted to staff engineer", "Ana was promoted to head nurse".
_ROLE_PROMOTED_RE = re.compile(r"\bpromoted\s+to\s+(?:(?:a|an|the)\s+)?(?P<role>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2})")
# A role said with the job: "started a new job as a product manager", "works at Acme as a nurse".
_ROLE_AS_RE = re.compile(
    r"\b(?:job|position|role|work(?:s|ed|ing)?|hired|started|joined|employed|intern(?:s|ed|ing)?)\b"
    r"(?:[^.;!?]|\.(?=\w)){0,60}?"  # a dot inside a word ("Booking.com") is no sentence end
    r"\bas\s+(?:a|an)\s+(?P<role>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2})"
)
_ROLE_NAMED_RE = re.compile(
    rf"(?P<who>{_NAME})\s+(?:is|became|works\s+as|is\s+working\s+as)\s+(?:a|an)\s+"
    r"(?P<role>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2})"
)

# People named by how they relate to someone: "my partner Tomás", "our six-year-old daughter Ivy", "Maya's
# manager Lena", "her ex-husband Rob" (an "ex" or "former" one is a relation that has ended). The edge runs
# from the owner: owner parent_of daughter, owner child_of mother, owner reports_to manager.
_KIN = {
    **dict.fromkeys(
        ("partner", "wife", "husband", "spouse", "girlfriend", "boyfriend", "fiance", "fiancé", "fiancée"), "partner_of"
    ),
    **dict.fromkeys(("daughter", "son", "child", "kid", "stepdaughter", "stepson", "baby", "newborn"), "parent_of"),
    **dict.fromkeys(("mother", "mom", "mum", "father", "dad"), "child_of"),
    **dict.fromkeys(("sister", "brother", "sibling"), "sibling_of"),
    **dict.fromkeys(("colleague", "coworker", "co-worker", "teammate"), "works_with"),
    **dict.fromkeys(("boss", "manager"), "reports_to"),
    "friend": "friend_of",
    **dict.fromkeys(("neighbour", "neighbor"), "neighbour_of"),
    **dict.fromkeys(("roommate", "flatmate", "housemate"), "lives_with"),
    **dict.fromkeys(("grandmother", "grandma", "granny", "grandfather", "grandpa", "grandparent"), "grandchild_of"),
    **dict.fromkeys(("granddaughter", "grandson", "grandchild"), "grandparent_of"),
    **dict.fromkeys(("cousin", "aunt", "uncle", "niece", "nephew"), "relative_of"),
}
_KIN_RE = re.compile(
    rf"\b(?P<owner>[Mm]y|[Oo]ur|[Yy]our|[Hh]is|[Hh]er|[Tt]heir|{_NAME}['’]s)\s+(?P<mods>(?:[\w-]+\s+){{0,2}}?)"
    rf"(?P<ex>ex-)?(?P<kin>{'|'.join(sorted(_KIN, key=len, reverse=True))})\s+"
    rf"(?P<name>{_NAME}(?:\s+{_NAME})?)(?!['’]s\b)"
)
# ... and after the name: "Priya Raman, my manager and our head of data".
_KIN_APPOSITIVE_RE = re.compile(
    rf"(?P<name>{_NAME}(?:\s+{_NAME})?),\s+(?P<owner>[Mm]y|[Oo]ur|[Yy]our|[Hh]is|[Hh]er|[Tt]heir)\s+"
    rf"(?P<mods>(?:[\w-]+\s+){{0,2}}?)(?P<ex>ex-)?(?P<kin>{'|'.join(sorted(_KIN, key=len, reverse=True))})\b(?!['’])"
)
# ... or named after it: "Jonas's baby arrived on Monday, a little boy called Finn", "our baby, named Lou".
_KIN_CALLED_RE = re.compile(
    rf"\b(?P<owner>[Mm]y|[Oo]ur|[Yy]our|[Hh]is|[Hh]er|[Tt]heir|{_NAME}['’]s)\s+(?P<mods>(?:[\w-]+\s+){{0,2}}?)"
    rf"(?P<ex>ex-)?(?P<kin>{'|'.join(sorted(_KIN, key=len, reverse=True))})\b"
    r"(?:,?\s+|[^.!?;'’]{0,50}?,\s+(?:a\s+)?(?:little\s+|baby\s+|healthy\s+)?(?:boy|girl)\s+)"
    rf"(?:called|named)\s+(?P<name>{_NAME}(?:\s+{_NAME})?)"
)
# Facts about a person an assistant must not forget: allergies, diet, languages, birthday, age.

_BE_NOW = r"(?:I'm|I\s+am|we're|we\s+are|is|are)"
_BE = rf"(?:{_BE_NOW}|was|has\s+been|have\s+been)"
_ALLERGY_RE = re.compile(
    rf"\b{_BE}\s+(?:(?:very|severely|mildly|really|also|quite)\s+)?allergic\s+to\s+(?P<what>[^.;:!?()]+)"
    r"|\b(?:has|have|had)\s+(?:an?\s+|a\s+\w+\s+)?(?P<what2>[a-z][a-z -]{1,30}?)\s+allergy\b",
    re.IGNORECASE,
)
_DIETS = (
    "vegetarian",
    "vegan",
    "pescatarian",
    "gluten-free",
    "lactose intolerant",
    "lactose-intolerant",
    "coeliac",
    "celiac",
    "diabetic",
    "halal",
    "kosher",
    "teetotal",
    "sober",
)
_DIET_RE = GatedPattern(
    re.compile(
        rf"\b{_BE}\s+(?:(?:a|an|strictly|fully|now|also|still|no\s+longer|not)\s+)*"
        rf"(?P<diet>{'|'.join(_DIETS)})\b",
        re.IGNORECASE,
    ),
    (
        "vegetarian",
        "vegan",
        "pescatarian",
        "gluten",
        "lactose",
        "coeliac",
        "celiac",
        "diabetic",
        "halal",
        "kosher",
        "teetotal",
        "sober",
    ),
)
# "I'm pescatarian now, not vegetarian", "not vegan anymore": a diet that held and has ended.
_DIET_LEFT_RE = re.compile(rf"\b(?:not|no\s+longer)\s+(?:a\s+|an\s+)?(?P<diet>{'|'.join(_DIETS)})\b", re.IGNORECASE)
_SINCE_NOW = re.compile(r"\b(?:now|anymore|any\s+more|no\s+longer)\b", re.IGNORECASE)
_SEVERITY = frozenset({"a", "an", "the", "some", "to", "severe", "mild", "serious", "bad", "slight", "strong"})
# "allergic to cats, sadly": a remark closing the list, no allergen.
_REMARKS = frozenset(
    """sadly unfortunately luckily thankfully fortunately apparently obviously honestly actually
    though too also either lol haha""".split()
)
_LANGUAGES = lexicon.ordered("languages")
_LANGUAGE_LIST = rf"(?:{'|'.join(_LANGUAGES)})"
_SPEAKS_RE = re.compile(
    rf"\b(?:speaks?|speaking|fluent\s+in|learning|learn|learns|learned|learnt)\s+(?:(?:some|a\s+little|fluent|"
    rf"basic|good|decent)\s+)?(?P<langs>{_LANGUAGE_LIST}(?:\s*(?:,|and|&)\s*{_LANGUAGE_LIST})*)"
)
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAY_OF_MONTH = rf"(?:(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS}))"
_WEEKDAY_BEFORE = r"(?:(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day,?\s+)?(?:the\s+)?"
_AGE_WORDS = AGE_WORD_ALTERNATION
_BIRTHDAY_RE = re.compile(
    rf"\b(?P<owner>[Mm]y|[Oo]ur|[Yy]our|[Hh]is|[Hh]er|{_NAME}['’]s)\s+(?:\d{{1,3}}(?:st|nd|rd|th)\s+)?birthday\s+"
    rf"(?:is|was|falls)\s+(?:on\s+)?{_WEEKDAY_BEFORE}(?P<date>{_DAY_OF_MONTH})"
    # "Ivy turns seven on March 21": the day someone turns an age is their birthday.
    rf"|\b(?P<who>I|[Hh]e|[Ss]he|{_NAME})\s+(?:turns?|turned|will\s+turn|is\s+turning)\s+(?P<turns>\d{{1,3}}|{_AGE_WORDS})\s+"
    rf"on\s+{_WEEKDAY_BEFORE}(?P<date2>{_DAY_OF_MONTH})"
)
_OWNER_OF_SUBJECT = {"i": "my", "he": "his", "she": "her"}
# "Ivy was born on March 21, 2019": the day someone was born is their birthday.
_BORN_ON_RE = re.compile(
    rf"\b(?P<who>I|[Hh]e|[Ss]he|{_NAME})\s+(?:was|were)\s+born\s+on\s+{_WEEKDAY_BEFORE}"
    rf"(?P<date>{_DAY_OF_MONTH})"
)
# "Tomás and Maya got married", "Ann married Ben", "Ann is married to Ben".
_MARRIED_RE = re.compile(
    rf"\b(?P<a>{_NAME})\s+and\s+(?P<b>{_NAME})\s+(?:(?:got|are|were|have\s+been|had\s+been)\s+)?married\b"
    rf"|\b(?P<a2>{_NAME})\s+(?:(?:is|was|got)\s+married\s+to|married)\s+(?P<b2>{_NAME})"
)
# "Ivy is 6", "Ivy is seven now": a bare number after a person's name and "is" is an age (after
# anything else it is not: "the team is 12", "Gate is 4"). Read only where the name is a person's.
# Not "was": "when Joanna was 10", "ever since Dave was ten" tell a past age, not the age now.
# "our daughter Ivy, who's six" says it in a relative clause.
_AGE_IS_RE = re.compile(
    rf"\b(?P<who>{_NAME})(?:\s+is|,\s+who(?:\s+is|['’]s))\s+(?:now\s+|only\s+|just\s+|almost\s+)?"
    rf"(?P<age>\d{{1,2}}|{_AGE_WORDS})(?:\s+now)?(?=\s*(?:$|[.,;!?]|\band\b|\bbut\b))"
)
# "I take 20 mg of lisinopril", "Tomás is on metformin", "stopped taking sertraline": a medicine someone takes.
_MEDICATION_RE = re.compile(
    rf"\b(?:takes?|taking|(?:am|'m|is|are|was|been)\s+(?:now\s+|still\s+|also\s+)?on|prescribed|"
    rf"(?:started|stopped|quit)\s+(?:taking|on))\s+(?:(?:a|an|my|his|her|the|\d|one|two|three)\s+)?(?:{DOSE}\s+(?:of\s+)?)?"
    rf"(?:(?:pills?|tablets?|capsules?|doses?)\s+of\s+)?"
    rf"(?P<med>{MEDICINE}|[A-Za-z][a-z]{{3,}}(?=\s+{DOSE}|\s+(?:pills?|tablets?|capsules?)\b))\b",
    re.IGNORECASE,
)
# An age now: not "was" ("when I was 10 years old").
_AGE_RE = re.compile(
    rf"\b{_BE_NOW}\s+(?:now\s+|just\s+|turning\s+)?(?P<age>\d{{1,3}})\s+years?\s+old\b"
    r"|\bturned\s+(?P<age2>\d{1,3})\b(?!\s*(?:%|percent|degrees|minutes|hours|days|times))"
)

# Who moved: the word just before "moved" (past "just", "recently", "have", …) must be a person or a
# personal pronoun.
_MOVER = re.compile(r"([\w'’]+?)(?:['’]s)?\s+(?:(?:just|recently|finally|already|have|has|had|also)\s+)*$")
# "The user moved from Utrecht to Amsterdam": how another assistant's export names the person it is about.
_MOVER_PRONOUNS = frozenset({"i", "we", "he", "she", "they", "you", "user"})
# A statement that opens with its verb names no subject ("Moved to Hamburg", "Lives in Utrecht now",
# "Uses Notion"), as another assistant's export writes them: capitalised, the verb would read as a name
# (or, before a name, as part of it); lower-cased, the rules give the fact to the event's first person.
# Modals that are also names ("Will", "May") are left alone.
_OPENING_VERBS = lexicon.words("opening_verbs")
_OPENING_WORD = re.compile(r"[A-Z][a-z]+\b(?=\s)")

# Words that can be the subject of a clause: names, and the pronouns that mean the speaker or the
# one spoken to (the event's first participant).
_SUBJECT_WORD = re.compile(rf"{_NAME}|\b(?i:we|you|he|she|they)\b")
_SPEAKER_WORDS = frozenset({"i", "we", "you"})
# "She works at Google": the one person the text named before; "they" may be several people.
_THIRD_PERSON = frozenset({"he", "she", "they"})
_PRONOUN_RE = re.compile(r"\b(?:he|she|they)\b", re.IGNORECASE)
# "my sister Ana", "her husband Tom", "Mr. Lee": who a "she" or a "he" can be when several were named.
_GENDERED_RE = re.compile(
    rf"\b(?:(?P<f>(?i:{'|'.join(FEMININE_KIN)})|Mrs\.?|Ms\.?)|(?P<m>(?i:{'|'.join(MASCULINE_KIN)})|Mr\.?))"
    rf"\s+(?P<name>{_NAME})"
)
_PRONOUN_GENDER = {"she": "f", "he": "m"}
# "Sorry, her name is Lena, not Lina", "I meant Lena, not Lina": the person was named wrongly before.
_NAME_CORRECTION_RE = re.compile(
    rf"\b(?:(?i:his|her|their|my\s+\w+['’]s)|{_NAME}['’]s)\s+(?i:name)\s+(?i:is|was|['’]s)\s+(?:(?i:actually|really)\s+)?"
    rf"(?P<right>{_NAME})\s*,?\s+(?i:not)\s+(?P<wrong>{_NAME})\b"
    rf"|\b(?i:I\s+meant|it['’]s|it\s+is)\s+(?P<right2>{_NAME})\s*,?\s+(?i:not)\s+(?P<wrong2>{_NAME})\b"
)
# Someone other than the last person named holds what follows: "Maya's son is allergic to eggs",
# "She is allergic to cats" (an unresolved "she"). A personal fact there is nobody's we can name.
_OTHER_HOLDER = re.compile(
    r"\b(?:he|she|they|his|her|their|son|sons|daughter|daughters|kid|kids|child|children|baby|wife|husband|"
    r"partner|mother|mom|mum|father|dad|sister|brother|friend|colleague|boss|manager|cousin|niece|nephew|"
    r"grandma|grandpa|grandmother|grandfather|aunt|uncle)\b",
    re.IGNORECASE,
)
_KIN_ENDED = re.compile(r"\b(?:ex|former|late)\b", re.IGNORECASE)

# "Tomás teaches physics": a role named by the subject taught.
_TEACHES_RE = GatedPattern(
    re.compile(
        rf"(?P<who>{_NAME})\s+(?:teaches|taught|is\s+teaching)\s+(?P<subject>maths|math|mathematics|physics|chemistry|"
        r"biology|science|history|geography|english|french|german|spanish|dutch|latin|music|art|drama|economics|"
        r"philosophy|computer\s+science|literature|yoga|piano|guitar|swimming)\b(?!\s+(?:to|at\s+home)\b)",
        re.IGNORECASE,
    ),
    ("teach", "taught"),
)
_CAPITALISED_SUBJECTS = frozenset({"english", "french", "german", "spanish", "dutch", "latin"})
_ROLE_APPOSITIVE_RE = re.compile(
    rf"(?P<who>{_NAME}(?:\s+{_NAME})?),\s+(?:a|an)\s+(?P<role>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){{0,2}})"
)
_ROLE_AT_RE = re.compile(r"\b(?:" + "|".join(sorted(_ROLE_NOUNS)) + rf")\s+(?:at|for|with)\s+(?P<org>{_CAPS})")
_IN_NAME_RE = re.compile(
    rf"\b(?:in|at|near|via|around|through|outside|inside|into|across)\s+({_NAME}(?:\s+{_NAME})?)(?!['’]s)"
)

# ", Tomás prefers chess" after "Maya loves hiking": a capital after a comma opens the next statement
# (a lower-case word continues a list: "hiking, pottery and jazz").
_NEXT_STATEMENT = r",\s+(?:and\s+|but\s+)?(?-i:[A-Z])"
_LIKE_RE = GatedPattern(
    re.compile(
        r"(?P<neg>\b(?:don't|doesn't|didn't|do\s+not|does\s+not|did\s+not|never|not|would|'d|wouldn't)\s+)?"
        r"(?P<verb>\b(?:I|we|they|really|also|still|truly|totally|absolutely)\s+(?:love|like|adore)|"
        r"\b(?:loves|likes|adores|enjoys?|enjoyed|loved|prefers?|preferred)|"
        r"\b(?:is|am|'m|are)\s+(?:a\s+)?(?:big\s+|huge\s+)?fans?\s+of)\s+"
        rf"(?P<obj>(?:(?!{_NEXT_STATEMENT})[^.;:!?()\"“”])+)"
    ),
    ("love", "like", "ador", "enjoy", "prefer", "fan"),
)
_OBJ_STOP = re.compile(
    rf"{_NEXT_STATEMENT}.*$|\s+(?:because|but|when|since|while|so|with|as|if|which|that|who|for|in|at|on|during|every|after|"
    r"before|than|over|instead|rather|more|most|a\s+lot|very\s+much|too)\b.*$",
    re.IGNORECASE,
)
_OBJ_SKIP = lexicon.words("not_liked_things")
# "love that they're a great escape", "loved ones are ...": a clause, not a thing liked.
_OBJ_CLAUSE = re.compile(
    r"\b(?:is|are|was|were|am|be|been|has|have|had|can|could|will|would|should|meant|means)\b"
    r"|['’](?:re|ve|ll|m|d)\b",
    re.IGNORECASE,
)
# "... and they also need a home": a new subject opens another clause.
_OBJ_NEW_SUBJECT = frozenset("i we they he she you".split())
# "loves holding them", "loves seeing others enjoy it": what they point at is in another sentence.
_OBJ_REFERS = frozenset("it them him me us this that these those".split())
# "loves the hall and wants her party there": a second verb of the subject, with its own object.
_OBJ_NEXT_VERB = re.compile(
    r"(?!(?:her|his|their|my|our|your|its|the|a|an)\b)[a-z]+\s+"
    r"(?:(?:her|his|their|my|our|your|its|the|a|an|it|them|him|me|us)\b|[A-Z][\w-]*['’]s\b)"
)
# "I'd love to hear", "loves going with ...": a verb cut from what it was about.
_OBJ_INCOMPLETE = lexicon.words("incomplete_verbs")

_PET_RE = re.compile(
    r"\b(?:my|our|(?:has|have|got|adopted|bought|rescued|owns?)\s+(?:an?|another))\s+"
    r"(?:(?:new|little|pet|rescue|young|old|sweet|adorable)\s+)*"
    r"(?P<pet>guinea\s+pig|dogs?|puppy|cats?|kitten|parrot|hamster|rabbit|bunny|turtle|tortoise|horse|goldfish|"
    r"snake|lizard|ferret|"
    + "|".join(_DOG_BREEDS)
    + r")\b(?:(?:\s*,?\s*(?:named|called))?\s+(?P<pname>(?-i:[A-Z][\w'’-]+)))?",
    re.IGNORECASE,
)


_POSSESSIVE = re.compile(r"['’]s$")


# "Biscuit, our beagle": a pet named first, then described.
_PET_APPOSITIVE_RE = re.compile(
    rf"(?P<pname>{_NAME}),\s+(?:my|our)\s+(?:(?:new|little|old|young|rescue)\s+)?(?P<pet>"
    + "|".join(sorted(_PETS, key=len, reverse=True))
    + r")\b"
)
_TRAVEL_PLACE_RE = re.compile(
    rf"\b(?:fly|flying|flew|leave|leaves|leaving|arrive|arrives|arriving|land|lands|landing|depart\w*|"
    rf"taxi|cab|flights?|trains?|bus|shuttle|ferry)\s+"
    rf"(?:from\s+|at\s+|in\s+|into\s+|to\s+|out\s+of\s+)?({_NAME}(?:\s+{_NAME})?)"
)


@lru_cache(maxsize=4096)
def _key(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and ch not in "_-")


def _clean_name(text: str) -> str:
    """Trim possessives and leading/trailing words that are not part of a name."""
    words = re.sub(r"['’]s\b", "", text).strip(" .,'’-").split()
    while words and words[0] in _NOT_NAMES:
        words.pop(0)
    while words and words[-1] in _NOT_NAMES:
        words.pop()
    name = " ".join(words)
    return name if len(name) >= 2 else ""


def _said_when(status: str, ids: list[int], since: dict[int, str | None]) -> dict[str, str]:
    """A record stated only by undated sentences of cards dated ahead of when they were said
    begins (current) or ends (stated as ended) when the last of them was said; otherwise the
    applier dates it by its events."""
    starts = [since.get(i) for i in ids]
    if not starts or not all(starts):
        return {}
    return {"valid_from" if status == "active" else "valid_to": max(starts)}


class _Builder:
    """Accumulates nodes, facts and edges across events, each with its citing event ids."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str, str], list[int]] = {}
        self.edge_since: dict[tuple[str, str, str, str], dict[int, str | None]] = {}
        # When what the sentence being read states began, if the sentence does not say and its event
        # is dated ahead: when it was said. "I'm vegetarian" in an event about Saturday's dinner is
        # vegetarian since it was said, not since the dinner. None: the event's own time stands.
        self.since: str | None = None
        # While the sentence read says a possibility or a plan: only plans are stated.
        self.vetoed = False

    @staticmethod
    def _note_since(since: dict[int, str | None], event_id: int, value: str | None) -> None:
        since[event_id] = value if since.get(event_id, value) == value else None  # dated anywhere: dated

    def node(self, node_type: str, name: str, event_id: int, alias: str | None = None) -> str | None:
        name = " ".join(name.split())
        if not name:
            return None
        ref = f"{node_type}:{_key(name)}"
        node = self.nodes.get(ref)
        if node is None:
            node = self.nodes[ref] = {"name": name, "type": node_type, "ids": [], "aliases": {}, "facts": {}}
        if event_id not in node["ids"]:
            node["ids"].append(event_id)
        if alias and _key(alias) != _key(name):
            ids = node["aliases"].setdefault(alias, [])
            if event_id not in ids:
                ids.append(event_id)
        return ref

    def rename(self, wrong: str, right: str, event_id: int) -> str | None:
        """The person named ``right`` that was wrongly named ``wrong``: one node (the wrong name kept as
        an alias, and asked of the applier as a rename of a stored node), holding all that was
        gathered under either name."""
        ref = self.node("person", right, event_id, alias=wrong)
        old = f"person:{_key(wrong)}"
        if ref is None:
            return None
        self.nodes[ref].setdefault("renames", {}).setdefault(wrong, []).append(event_id)
        merged = self.nodes.pop(old, None) if old != ref else None
        if merged is not None:
            node = self.nodes[ref]
            node["ids"] = list(dict.fromkeys(merged["ids"] + node["ids"]))
            for alias, ids in merged["aliases"].items():
                if _key(alias) != _key(node["name"]):
                    node["aliases"].setdefault(alias, []).extend(
                        i for i in ids if i not in node["aliases"].get(alias, [])
                    )
            for fact_key, entry in merged["facts"].items():
                kept = node["facts"].setdefault(fact_key, entry)
                if kept is not entry:
                    kept["ids"] = list(dict.fromkeys(kept["ids"] + entry["ids"]))
                    kept["since"] = {**entry["since"], **kept["since"]}
            for (source, target, relation, status), ids in list(self.edges.items()):
                if old in (source, target):
                    since = self.edge_since.pop((source, target, relation, status), {})
                    del self.edges[(source, target, relation, status)]
                    source, target = (ref if source == old else source), (ref if target == old else target)
                    for event in ids:
                        self.edge(source, target, relation, event, status)
                    self.edge_since.get((source, target, relation, status), {}).update(since)
        return ref

    def fact(self, ref: str | None, key: str, value: str, event_id: int, status: str = "active") -> None:
        """``status`` "superseded" states that the fact held and has ended (it ends the current one)."""
        if ref is None or not value or (self.vetoed and key not in _PLAN_KEYS):
            return
        facts = self.nodes[ref]["facts"]
        entry = facts.setdefault(
            (key, value.casefold(), status), {"key": key, "value": value, "ids": [], "status": status, "since": {}}
        )
        if event_id not in entry["ids"]:
            entry["ids"].append(event_id)
        self._note_since(entry["since"], event_id, self.since)

    def fact_and_edge(self, source: str | None, target: str, key: str, event_id: int, status: str = "active") -> None:
        """``key`` stated both ways: a fact of ``source`` whose value is the target's name, and an edge."""
        self.fact(source, key, self.nodes[target]["name"], event_id, status)
        self.edge(source, target, key, event_id, status)

    def edge(
        self, source: str | None, target: str | None, relation: str, event_id: int, status: str = "active"
    ) -> None:
        if source is None or target is None or source == target or (self.vetoed and relation not in _PLAN_KEYS):
            return
        ids = self.edges.setdefault((source, target, relation, status), [])
        if event_id not in ids:
            ids.append(event_id)
        self._note_since(self.edge_since.setdefault((source, target, relation, status), {}), event_id, self.since)

    def proposal(self, events: int) -> dict[str, Any]:
        refs = list(self.nodes)[:MAX_NODES]
        kept = set(refs)
        nodes = []
        for ref in refs:
            node = self.nodes[ref]
            ids = list(node["ids"])
            nodes.append(
                {
                    "ref": ref,
                    "name": node["name"],
                    "type": node["type"],
                    "aliases": list(node["aliases"]),
                    "tags": [],
                    "provenance": {
                        "name": ids,
                        "aliases": [
                            {"value": a, "source_event_ids": list(a_ids)} for a, a_ids in node["aliases"].items()
                        ],
                        "tags": [],
                    },
                    **({"renames": list(node["renames"])} if node.get("renames") else {}),
                    "facts": [
                        {
                            "key": f["key"],
                            "value": f["value"],
                            "source_event_ids": list(f["ids"]),
                            **({"status": f["status"]} if f["status"] != "active" else {}),
                            **_said_when(f["status"], f["ids"], f["since"]),
                        }
                        for f in _named_pets_only(node["facts"].values())
                    ],
                    "source_event_ids": ids,
                }
            )
        edges = [
            {
                "from_ref": s,
                "to_ref": t,
                "relation": rel,
                "source_event_ids": list(ids),
                **({"status": status} if status != "active" else {}),
                **_said_when(status, ids, self.edge_since[(s, t, rel, status)]),
            }
            for (s, t, rel, status), ids in self.edges.items()
            if s in kept and t in kept
        ][:MAX_EDGES]
        return {
            "reason": f"offline rules: {len(nodes)} nodes and {len(edges)} edges from {events} events",
            "nodes": nodes,
            "edges": edges,
        }


class _EventReader:
    """Applies the rules to one event."""

    def __init__(
        self,
        builder: _Builder,
        event: dict[str, Any],
        texts: list[str],
        people: list[str],
        full_names: dict[str, str],
        unsure: set[str] = frozenset(),
        speakers: set[str] = frozenset(),
    ) -> None:
        self.b = builder
        self.id = event["id"]
        self.texts = texts
        self.planned = (event.get("temporal") or {}).get("status") == "planned"
        # A state said now cannot begin later: in a card dated ahead of when it was said (a plan), an
        # undated sentence's facts begin when it was said. Otherwise the card's time stands.
        temporal = event.get("temporal") or {}
        mentioned, happened = temporal.get("mentioned_at"), temporal.get("happened_start")
        ahead = isinstance(mentioned, str) and isinstance(happened, str) and happened[:10] > mentioned[:10]
        self.mentioned = mentioned if ahead else None
        self.said = mentioned if isinstance(mentioned, str) else None
        self.happened = happened if isinstance(happened, str) else None
        try:
            self.anchor = parse_timestamp(mentioned) if isinstance(mentioned, str) else None
        except Exception:  # an unreadable mention time only loses sentence dates
            self.anchor = None
        # Who "you" is: the user when the assistant speaks (it is listed first and is no person, so
        # the first person listed is the one spoken to); between people, someone this reader cannot tell.
        first = next((p for p in event.get("participants") or [] if isinstance(p, str)), "")
        self.assistant_speaks = first.strip().casefold() in ("assistant", "system", "ai", "bot")
        self.people: list[tuple[str, str]] = []  # (name as given, ref)
        self.named_before: list[str] = []  # people the sentences before this one in its text named
        self.genders: dict[str, str] = {}  # person ref -> "f" / "m" where the text shows it
        self.quotes = {q.strip() for q in event.get("quotes") or [] if isinstance(q, str)}
        self.unsure = unsure
        self.person_keys: dict[str, str] = {}
        for name in people:
            display, alias = name, None
            first = _key(name.split()[0])
            if " " not in name and first in full_names:
                display, alias = full_names[first], name  # "Jonas" is the batch's only "Jonas Weber"
            elif " " in name and full_names.get(first) == name:
                alias = next((p for p in people if " " not in p and _key(p) == first), None)
            ref = self.b.node("person", display, self.id, alias)
            if ref is None:
                continue
            if all(ref != r for _, r in self.people):
                self.people.append((name, ref))
            self.person_keys[_key(name)] = ref
            self.person_keys[_key(display)] = ref
        for name, ref in self.people:
            if " " in name:
                self.person_keys.setdefault(_key(name.split()[0]), ref)
        self.speakers = speakers

    # -- subjects -----------------------------------------------------------------

    def subject(self, sentence: str, before: int) -> str | None:
        """The first participant named before the match in this sentence, else the event's first.
        An owner is passed over: in "Maya's daughter Ivy is 6 and loves drawing" Ivy loves it. A
        sentence led by "she" or "he" is about whom that means (``antecedent``), or no one."""
        for match in _SUBJECT_WORD.finditer(sentence[:before]):
            if re.search(r"['’]s$", match.group(0)):  # (a name takes its possessive along)
                continue
            if match.group(0).casefold() in _THIRD_PERSON:
                return self.antecedent(sentence, match.start(), match.group(0))
            ref = self.person(match.group(0))
            if ref:
                return ref
        return self.people[0][1] if self.people else None

    def antecedent(self, sentence: str, at: int, pronoun: str) -> str | None:
        """Whom "she" or "he" at ``at`` means: the one person named before it in the sentence (owners
        passed over), else the one named in the earlier sentences of the same text ("Maya's sister
        Ana moved to Lisbon. She works at Google": Ana; "I met Tom. He is allergic to nuts": Tom).
        Of several, the one a word such as "sister" or "husband" shows to fit the pronoun; else
        no one, as for "they": a fact given to the wrong person is worse than none."""
        wanted = _PRONOUN_GENDER.get(pronoun.casefold())
        if wanted is None:
            return None
        # A card with quotes retells the speaker's words, where "she" is never the speaker (or the one
        # they speak to), though the retelling names them; an event written about someone may mean them.
        speaker = self.people[0][1] if self.quotes and self.people else None
        for refs in (self._named_people(sentence[:at]), self.named_before):
            refs = [ref for ref in dict.fromkeys(refs) if ref != speaker]
            fitting = [ref for ref in refs if self.genders.get(ref) == wanted]
            found = refs[0] if len(refs) == 1 else fitting[0] if len(fitting) == 1 else None
            if refs:
                return found if found in self.b.nodes else None  # not someone unsure
        # No one named before: the one person the extractor listed without the text naming them
        # (whom an earlier message of the speaker called "my sister Ana").
        return self.hinted[0] if len(self.hinted) == 1 else None

    @cached_property
    def hinted(self) -> list[str]:
        """People of the event its texts do not name (other speakers aside): whom the extractor
        listed for a pronoun (read only when a pronoun finds no one named before it)."""
        joined = " ".join(self.texts)
        return [
            ref
            for name, ref in self.people[1:]
            if _key(name) not in self.speakers
            and not re.search(rf"(?<![\w-]){re.escape(name.split()[0])}(?![\w-])", joined)
        ]

    def _named_people(self, text: str) -> list[str]:
        """The people ``text`` names, in order, with participants that may be people (as "?key");
        an owner ("Maya's") is passed over."""
        out = []
        for match in re.finditer(_NAME, text):
            if not re.search(r"['’]s$", match.group(0)):
                ref = self.person(match.group(0))
                if ref is not None:
                    out.append(ref)
                elif _key(match.group(0)) in self.unsure:
                    out.append("?" + _key(match.group(0)))
        return out

    def clause_subject(self, sentence: str, before: int) -> str | None:
        """Who does what the match states: the person or first/second-person pronoun named last
        before it in its clause ("… and our daughter Ivy, and you moved from Dublin": the one spoken
        to, not Ivy; "Maya's partner Tomás moved": Tomás), else ``subject`` over the sentence."""
        named, found, _ = self._named_last(sentence, before)
        return found if named else self.subject(sentence, before)

    def holder(self, sentence: str, before: int) -> str | None:
        """Whose personal fact (allergy, diet, age …) the match states: ``clause_subject``, unless
        someone unnamed comes after the last person named ("Maya's son is allergic") - then no one,
        rather than the wrong person."""
        clause = _clause_before(sentence, before)
        named, found, end = self._named_last(sentence, before)
        if _OTHER_HOLDER.search(clause[end:]):
            return None
        return found if named else self.subject(sentence, before)

    def _named_last(self, sentence: str, before: int) -> tuple[bool, str | None, int]:
        """(whether the clause before ``before`` names anyone, who it names last, where in the
        clause that name ends)."""
        clause = _clause_before(sentence, before)
        offset = before - len(clause)
        named, found, end = False, None, 0
        for match in _SUBJECT_WORD.finditer(clause):
            word = re.sub(r"['’]\w*$", "", match.group(0))  # "I'm", "Maya's"
            if word.casefold() in _SPEAKER_WORDS:
                named, found, end = True, self.speaker_or_addressee(word), match.end()  # None: a "you" no one is
            elif word.casefold() in _THIRD_PERSON:
                named, found, end = True, self.antecedent(sentence, offset + match.start(), word), match.end()
            elif self.person(word):
                named, found, end = True, self.person(word), match.end()
        return named, found, end

    def speaker_or_addressee(self, pronoun: str) -> str | None:
        """The person "I"/"we"/"my"/"our" (the speaker) or "you"/"your" means, when known."""
        if not self.people:
            return None
        if pronoun.casefold() in ("you", "your") and not self.assistant_speaks:
            return None
        return self.people[0][1]

    def owner(self, word: str, sentence: str, at: int) -> str | None:
        """Whose ("my", "her", "Maya's") the thing named at ``at`` is, when it can be told."""
        if word.casefold() in ("my", "our", "your"):
            return self.speaker_or_addressee(word)
        if word.casefold() in ("his", "her", "their"):
            return self.last_person(sentence, at)
        return self.person(word)

    def last_person(self, sentence: str, before: int) -> str | None:
        """The person named last before ``before``: whom "his" or "her" most likely means (None
        when no one is; guessing the speaker would make "Tomás and his brother" Maya's brother)."""
        found = None
        for match in re.finditer(_NAME, sentence[:before]):
            found = self.person(match.group(0)) or found
        return found

    def person(self, word: str) -> str | None:
        """The person a word names ("Maya", "Maya's"), if one of the event's."""
        return self.person_keys.get(_key(re.sub(r"['’]s$", "", word)))

    def is_person(self, name: str) -> bool:
        return _key(name) in self.person_keys or _key(name.split()[0]) in self.person_keys

    # -- entities -----------------------------------------------------------------

    def place(self, name: str) -> str | None:
        if _POSSESSIVE.search(name):
            return None  # "moved to Sarah's place" names no place
        name = _clean_name(name)
        if not name or self.is_person(name) or name.casefold() in _TOOL_CANON:
            return None
        return self.b.node("place", _PLACE_CANON.get(name.casefold(), name), self.id)

    def org(self, name: str, alias: str | None = None) -> str | None:
        if _POSSESSIVE.search(name):
            return None
        name = _clean_name(name)
        if not name or self.is_person(name) or name.casefold() in _PLACE_CANON:
            return None
        return self.b.node("organization", name, self.id, alias)

    def tool(self, name: str) -> str | None:
        if _POSSESSIVE.search(name):
            return None
        name = _clean_name(name)
        if not name or self.is_person(name) or name.casefold() in _PLACE_CANON:
            return None
        return self.b.node("tool", _TOOL_CANON.get(name.casefold(), name), self.id)

    # -- rules --------------------------------------------------------------------

    def read(self) -> None:
        pronouns = any(_PRONOUN_RE.search(text) for text in self.texts)
        if pronouns:  # genders and the people named before a sentence serve only a he/she/they
            for text in self.texts:
                for m in _GENDERED_RE.finditer(text):
                    ref = self.person(m.group("name"))
                    if ref is not None:
                        self.genders[ref] = "f" if m.group("f") else "m"
        self._corrections()
        # Titles and quotes often repeat the summary: read each distinct sentence once (one with a
        # pronoun once per set of people named before it in its text).
        seen: set = set()
        previous = None
        for text in self.texts:
            if not (previous in self.quotes and text in self.quotes):  # a card's quotes are one passage
                self.named_before = []
            previous = text
            for part in _SENTENCE_SPLIT.split(text):
                sentence = without_time_zones(part.strip())
                if not sentence:
                    continue
                key = (sentence, *dict.fromkeys(self.named_before)) if _PRONOUN_RE.search(sentence) else sentence
                if key not in seen:
                    seen.add(key)
                    self.b.since = self._own_time(sentence) if might_contain_time(sentence) else self.mentioned
                    self.sentence(self._subjectless(sentence))
                if pronouns:
                    self.named_before += self._named_people(sentence)
        self.b.since = None
        refs = sorted(r for _, r in self.people)
        for i, first in enumerate(refs):
            for second in refs[i + 1 :]:
                self.b.edge(first, second, "knows", self.id)

    def _corrections(self) -> None:
        """A person named wrongly before ("her name is Lena, not Lina") becomes one person under the
        right name; "it's Lena, not Lina" only where the wrong name is a person of this card."""
        for text in self.texts:
            for m in _NAME_CORRECTION_RE.finditer(text):
                right, wrong = (
                    (m.group("right"), m.group("wrong")) if m.group("right") else (m.group("right2"), m.group("wrong2"))
                )
                right, wrong = _clean_name(right), _clean_name(wrong)
                if not right or not wrong or _key(right) == _key(wrong) or _denial(text, m.start()):
                    continue
                if not m.group("right") and self.person(wrong) is None:
                    continue
                ref = self.b.rename(wrong, right, self.id)
                if ref is None:
                    continue
                old = f"person:{_key(wrong)}"
                self.person_keys = {key: ref if r == old else r for key, r in self.person_keys.items()}
                self.person_keys[_key(wrong)] = self.person_keys[_key(right)] = ref
                people: list[tuple[str, str]] = []
                for name, r in [*self.people, (right, ref)]:
                    r = ref if r == old else r
                    if all(r != other for _, other in people):
                        people.append((name, r))
                self.people = people

    def _subjectless(self, sentence: str) -> str:
        """The sentence with an opening verb lower-cased (``_OPENING_VERBS``), unless it is one of the
        event's people."""
        m = _OPENING_WORD.match(sentence)
        if m is None or m.group(0).casefold() not in _OPENING_VERBS or self.person(m.group(0)) is not None:
            return sentence
        return m.group(0).casefold() + sentence[m.end() :]

    def _own_time(self, sentence: str) -> str | None:
        """When a sentence dates itself otherwise than its card ("Maya left Acme in 2024. She joined
        Beta last month." is one card dated 2024): its facts begin, or end, then."""
        start = time_for(sentence, self.anchor).get("happened_start")
        return start if start and start != self.happened else None

    def sentence(self, s: str) -> None:
        for m in _GOES_BY_RE.finditer(s):
            who, alias = _goes_by(m)
            ref = self.person(who)
            if ref is not None and not _denial(s, m.start()):
                self.b.node("person", self.b.nodes[ref]["name"], self.id, alias)
        # "I might switch my editor to Vim": a possibility or a plan, never a current fact (a plan stays one).
        self.b.vetoed = bool(CONDITIONAL.search(s))
        try:
            self._facts(s)
        finally:
            self.b.vetoed = False

    def _facts(self, s: str) -> None:
        self._zh_tools(s)
        self._zh_allergies(s)
        projects = self._projects(s)
        self._orgs(s, projects)
        self._places(s)
        self._tools(s, projects)
        self._roles(s)
        self._likes(s)
        self._pets(s)
        self._kin(s)
        self._personal(s)

    def _projects(self, s: str) -> set[str]:
        names = set()
        for m in _PROJECT_RE.finditer(s):
            name = _clean_name(m.group("name") or m.group("name2") or "")
            if not name or self.is_person(name):
                continue
            names.add(name.casefold())
            if m.group("surface"):
                names.add(" ".join(m.group("surface").split()).casefold())
            ref = self.b.node("project", name, self.id, m.group("surface"))
            verb = _WORKS_ON_VERB.search(s[max(0, m.start() - 40) : m.start()])
            if verb and not _denial(s, m.start()):
                self.b.edge(self.clause_subject(s, m.start()), ref, "works_on", self.id)
        return names

    def _orgs(self, s: str, projects: set[str]) -> None:
        for m in _ORG_SUFFIX_RE.finditer(s):
            base, suffix = m.group(1), m.group(2)
            if suffix in _LEGAL_SUFFIXES:
                self.org(base, f"{_clean_name(base)} {suffix}")
            else:
                self.org(f"{_clean_name(base)} {suffix}")
        for m in _UNIVERSITY_OF_RE.finditer(s):
            place = _clean_name(m.group(1))
            if place:
                self.org(f"University of {place}")
        matches = [
            (m, m.group("org") or m.group("org2") or m.group("org3"), m.group("verb")) for m in _WORK_AT_RE.finditer(s)
        ]
        matches += [(m, m.group("org"), "works") for m in _ROLE_AT_RE.finditer(s)]
        matches += [(m, m.group("org") or m.group("org2"), "left") for m in _LEAVE_ORG_RE.finditer(s)]
        for m, raw, verb in matches:
            suffix = _ORG_SUFFIX_RE.match(raw + " ")  # "Acme Inc" names the company "Acme"
            name = _clean_name(raw)
            if suffix and suffix.group(2) in _LEGAL_SUFFIXES:
                name = _clean_name(suffix.group(1))
            if not name or name.casefold() in projects or name.casefold() in _TOOL_CANON:
                continue
            ref = self.org(name)
            if ref is None:
                continue
            subject = self.clause_subject(s, m.start())
            denial = _denial(s, m.start())
            if denial == "denied":
                continue
            if verb == "started" and _SCHOOL_AFTER.match(s, m.end()):
                self.b.edge(subject, ref, "attends", self.id)
                continue
            ended = denial == "ended" or verb == "left"
            # "left Acme and joined Beta": what was left is past, not what was joined
            past = verb == "worked" or _PAST_WORK.search(_clause_before(s, m.start())) or ended
            if ended:  # "no longer works at", "resigned from": the current employment ends here
                self.b.fact_and_edge(subject, ref, "works_at", self.id, "superseded")
            if past:
                self.b.edge(subject, ref, "worked_at", self.id)
            else:
                self.b.fact_and_edge(subject, ref, "works_at", self.id)

    def _places(self, s: str) -> None:
        for pattern, relation in ((_LIVE_RE, "lives_in"), (_MOVE_RE, "lives_in"), (_LIVED_RE, "lived_in")):
            for m in pattern.finditer(s):
                name = m.group(1)
                if pattern is _MOVE_RE and _moved_tool(name, s):
                    continue  # "moved the service to Postgres": a tool, handled below
                ref = self.place(name)
                if ref is None:
                    continue
                subject = self.clause_subject(s, m.start())
                denial = _denial(s, m.start())
                if denial == "denied":
                    continue
                if denial == "ended":  # "no longer lives in": the current residence ends here
                    self.b.fact_and_edge(subject, ref, "lives_in", self.id, "superseded")
                    self.b.edge(subject, ref, "lived_in", self.id)
                elif relation == "lives_in":
                    self.b.fact_and_edge(subject, ref, "lives_in", self.id)
                else:
                    self.b.edge(subject, ref, relation, self.id)
        for m in _MOVE_FROM_RE.finditer(s):
            denial = _denial(s, m.start())
            mover = _MOVER.search(s[: m.start()])
            opens = not s[: m.start()].strip()  # "moved from Utrecht to Amsterdam": the first person's move
            if (
                denial == "denied"
                or not opens
                and (
                    mover is None
                    or not (mover.group(1).casefold() in _MOVER_PRONOUNS or self.is_person(mover.group(1)))
                )
            ):
                continue  # "swimming moved from Saturdays to Sundays": a thing moved, not a home
            subject = self.clause_subject(s, m.start())
            for group in ("old", "new"):
                name = m.group(group)
                if not name or _moved_tool(name, s):
                    continue  # "moved the service away from Heroku": a tool
                ref = self.place(name)
                if ref is None:
                    continue
                if group == "old":  # the residence left ends here
                    self.b.fact_and_edge(subject, ref, "lives_in", self.id, "superseded")
                    self.b.edge(subject, ref, "lived_in", self.id)
                else:
                    self.b.fact_and_edge(subject, ref, "lives_in", self.id)
        for m in _VISIT_RE.finditer(s):
            name = _clean_name(m.group(1))
            strict = _STRICT_VISIT.match(m.group(0))
            if not name or (not strict and name.casefold() not in _PLACE_CANON):
                continue  # "went to Pride" or "visited Sarah" is not a place; "went to Paris" is
            ref = self.place(name)
            if ref is not None and not _denial(s, m.start()):
                relation = "plans_to_visit" if self.planned else "visited"
                self.b.edge(self.clause_subject(s, m.start()), ref, relation, self.id)
        # at the place, so that "I'm" inside the match is read as the subject
        origins = [(m.start(1) if m.group(1) else m.start(2), m.group(1) or m.group(2)) for m in _FROM_RE.finditer(s)]
        origins += [
            (m.start(1), m.group(1))
            for m in _FROM_WEAK_RE.finditer(s)
            if _clean_name(m.group(1)).casefold() in _PLACE_CANON
        ]
        for at, name in origins:
            ref = self.place(name)
            if ref is not None:
                subject = self.clause_subject(s, at)
                self.b.fact(subject, "hometown", self.b.nodes[ref]["name"], self.id)
                self.b.edge(subject, ref, "hometown", self.id)
        for m in _CITY_STATE_RE.finditer(s):
            if m.group(2) in _PLACE_CANON.values() or m.group(2).casefold() in _PLACE_CANON:
                self.place(m.group(1))
                self.place(m.group(2))
        for m in _KNOWN_PLACE_RE.finditer(s):
            self.place(m.group(1))
        for m in _PLACE_NOUN_RE.finditer(s):
            self.place(m.group(1))

    def _tools(self, s: str, projects: set[str]) -> None:
        seen: set[str] = set()
        for m in _USE_RE.finditer(s):
            raw = m.group("tool")
            name = _clean_name(raw)
            known = name.casefold() in _TOOL_CANON
            if not name or name.casefold() in projects or name.casefold() in _PLACE_CANON:
                continue
            if m.group("verb").startswith(("mov",)) and not known and not _TECH_WORDS.search(s):
                continue  # "moved to Denver" is a place (handled above)
            ref = self.tool(name)
            if ref is not None:
                seen.add(ref)
                self._use(s, m.start(), ref)
        for pattern in (_KNOWN_TOOL_RE, _ANY_CASE_TOOL_RE):
            for m in pattern.finditer(s):
                ref = self.tool(m.group(1))
                if ref is None or ref in seen:
                    continue
                seen.add(ref)
                before = s[: m.start()]
                taken = _TAKEN_FOR.search(before)
                if _LEFT.search(before):
                    self._use(s, m.start(), ref, ended=True)  # "switched from Jenkins to GitLab"
                elif taken:  # whatever denies the verb ("ditched") is about the tool left, not this one
                    self._use(s, taken.start(), ref)
                elif _USE_VERB.search(_statement_before(s, m.start())) and not re.search(r"\bfrom\s+$", before):
                    self._use(s, m.start(), ref)

    def _zh_tools(self, s: str) -> None:
        """ "我用 Notion 记笔记" uses Notion; "我不再用 Notion 了，改用 Obsidian" ends it and uses Obsidian."""
        for m in _ZH_USE_RE.finditer(s):
            if m.group("neg") and m.group("neg") != "不再":
                continue  # "我不用 Jira": denied, neither held nor ended
            ref = self.tool(m.group("tool"))
            if ref is not None:
                subject = self.clause_subject(s, m.start())
                self.b.fact_and_edge(subject, ref, "uses", self.id, "superseded" if m.group("neg") else "active")

    def _zh_allergies(self, s: str) -> None:
        for m in _ZH_ALLERGY_RE.finditer(s):
            if m.group("neg"):
                continue  # "我对花生不过敏" / "不对…过敏": denied
            self.b.fact(self.holder(s, m.start()), "allergic_to", m.group("what"), self.id)

    def _use(self, s: str, at: int, ref: str, ended: bool = False) -> None:
        denial = _denial(s, at)
        if denial == "denied":
            return
        # "stopped using X" and "switched from X" end the use
        status = "superseded" if ended or denial == "ended" else "active"
        subject = self.clause_subject(s, at)
        self.b.fact_and_edge(subject, ref, "uses", self.id, status)

    def _roles(self, s: str) -> None:
        found = [(m, self.people[0][1] if self.people else None) for m in _ROLE_FIRST_RE.finditer(s)]
        found += [
            (m, self.clause_subject(s, m.start()))
            for pattern in (_ROLE_AS_RE, _ROLE_PROMOTED_RE)
            for m in pattern.finditer(s)
        ]
        for pattern in (_ROLE_NAMED_RE, _ROLE_APPOSITIVE_RE):
            for m in pattern.finditer(s):
                ref = self.person_keys.get(_key(m.group("who")))
                if ref:
                    found.append((m, ref))
        for m, subject in found:
            words = m.group("role").split()
            # Keep the phrase up to its last role noun: "software engineer at Acme" -> "software
            # engineer", "lead data architect" -> all of it (not "lead").
            end = next(
                (
                    i
                    for i in range(len(words) - 1, -1, -1)
                    if words[i] in _ROLE_NOUNS or " ".join(words[max(0, i - 1) : i + 1]) in _ROLE_PHRASES
                ),
                None,
            )
            if end is None or subject is None:
                continue
            words = words[: end + 1]
            if not any(w in _ROLE_SKIP for w in words):
                self.b.fact(subject, "role", " ".join(words), self.id)
        for m in _TEACHES_RE.finditer(s):
            ref = self.person_keys.get(_key(m.group("who")))
            if ref and not _denial(s, m.start()):
                subject = " ".join(m.group("subject").split()).casefold()
                if subject in _CAPITALISED_SUBJECTS:  # "English teacher", "physics teacher"
                    subject = subject.capitalize()
                self.b.fact(ref, "role", f"{subject} teacher", self.id)

    def _likes(self, s: str) -> None:
        for m in _LIKE_RE.finditer(s):
            if m.group("neg"):
                continue
            verb = m.group("verb").casefold()
            key = "prefers" if "prefer" in verb else "likes"
            obj = _OBJ_STOP.sub("", m.group("obj").strip())
            subject = self.clause_subject(s, m.start("obj"))  # "I" in "I love" is inside the match
            for i, item in enumerate(re.split(r"\s*(?:,|\band\b|\bor\b|&)\s*", obj)):
                if _OBJ_CLAUSE.search(item) or (i and _OBJ_NEXT_VERB.match(item)):
                    break  # the rest is another clause
                words = item.strip().split()
                if words and words[0].casefold() in _OBJ_NEW_SUBJECT:
                    break  # "loves cats, and they also need a home, love and care": their needs, not her likes
                while words and words[0].casefold() in ("the", "a", "an", "my", "some", "to", "all", "our"):
                    words.pop(0)
                if (
                    not words
                    or len(words) > 4
                    or words[0].casefold() in _OBJ_SKIP
                    or (len(words) == 1 and words[0].casefold() in _OBJ_INCOMPLETE)
                    or any(w.casefold().strip("'’") in _OBJ_REFERS for w in words)
                ):
                    continue
                self.b.fact(subject, key, " ".join(words), self.id)

    def _kin(self, s: str) -> None:
        for m in [*_KIN_RE.finditer(s), *_KIN_APPOSITIVE_RE.finditer(s), *_KIN_CALLED_RE.finditer(s)]:
            name = _clean_name(m.group("name"))
            if not name or name.casefold() in _PLACE_CANON or name.casefold() in _TOOL_CANON:
                continue
            if (
                m.re is _KIN_APPOSITIVE_RE
                and " " not in name
                and not self.is_person(name)
                and not s[: m.start()].strip()
            ):
                continue  # "Thankfully, my son's ok": one unknown word opening the sentence is no name
            owner = self.owner(m.group("owner"), s, m.start())
            denial = _denial(s, m.start())
            if owner is None or denial == "denied":
                continue
            known = self.person_keys.get(_key(name)) or self.person_keys.get(_key(name.split()[0]))
            ref = known or self.b.node("person", name, self.id)
            if ref is None or ref == owner:
                continue
            ended = denial == "ended" or bool(m.group("ex")) or bool(_KIN_ENDED.search(m.group("mods") or ""))
            self.b.edge(owner, ref, _KIN[m.group("kin").casefold()], self.id, "superseded" if ended else "active")

    def _personal(self, s: str) -> None:
        # (where the value starts: what precedes it in its clause says who and whether it is denied, key, value)
        facts: list[tuple[int, str, str]] = []
        for m in _ALLERGY_RE.finditer(s):
            group = "what" if m.group("what") else "what2"
            what = _OBJ_STOP.sub("", (m.group(group) or "").strip())
            for item in re.split(r"\s*(?:,|\band\b|\bor\b|&)\s*", what):
                if re.search(r"\b(?:is|are|was|were|am|has|have|had)\b|['’]m\b", item, re.IGNORECASE):
                    break  # "peanuts and Maya is vegetarian": the next clause, no allergen
                words = [w for w in item.split() if w.casefold() not in _SEVERITY and w.casefold() not in _REMARKS]
                if words and len(words) <= 3:
                    facts.append((m.start(group), "allergic_to", " ".join(words).casefold()))
        facts += [(m.start("diet"), "diet", _diet(m.group("diet"))) for m in _DIET_RE.finditer(s)]
        facts += [(m.start("med"), "takes_medication", m.group("med").casefold()) for m in _MEDICATION_RE.finditer(s)]
        for m in _SPEAKS_RE.finditer(s):
            verb = s[m.start() : m.start("langs")].split()[0].casefold()
            key = "learning" if verb.startswith("learn") and not verb.endswith(("ed", "nt")) else "speaks"
            facts += [(m.start("langs"), key, lang) for lang in re.findall(_LANGUAGE_LIST, m.group("langs"))]
        facts += [
            (m.start("age" if m.group("age") else "age2"), "age", m.group("age") or m.group("age2"))
            for m in _AGE_RE.finditer(s)
        ]
        # Held by the name the match begins with (read up to it: "our daughter Ivy, who's six" is Ivy's).
        facts += [
            (m.end("who"), "age", str(NUMBER_WORDS.get(m.group("age").casefold(), m.group("age"))))
            for m in _AGE_IS_RE.finditer(s)
            if self.person(m.group("who"))
        ]
        stated = {(at, value) for at, key, value in facts if key == "diet"}
        for m in _DIET_LEFT_RE.finditer(s):
            diet = _diet(m.group("diet"))
            if _SINCE_NOW.search(s) and (m.start("diet"), diet) not in stated:
                self.b.fact(self.clause_subject(s, m.start()), "diet", diet, self.id, "superseded")
        for at, key, value in facts:
            denial = _denial(s, at)
            if denial == "denied":
                continue
            held = self.b.since
            if key in COUNTED_FACT_KEYS and held is None:
                # An age holds as of when it was said, not as of another clause's time in the card
                # ("our daughter Ivy, who's six. We moved here two years ago.").
                self.b.since = self.said
            self.b.fact(self.holder(s, at), key, value, self.id, "superseded" if denial == "ended" else "active")
            self.b.since = held
        for m in [*_BIRTHDAY_RE.finditer(s), *_BORN_ON_RE.finditer(s)]:
            owner = m.groupdict().get("owner") or _OWNER_OF_SUBJECT.get(m.group("who").casefold(), m.group("who"))
            ref = self.owner(owner, s, m.start())
            if ref is not None and not _denial(s, m.start()):
                date = m.group("date") or m.groupdict().get("date2")
                self.b.fact(ref, "birthday", " ".join(date.split()), self.id)
                if m.groupdict().get("turns"):
                    # "Ivy turns seven on March 21": from that day on, seven is her age.
                    held = self.b.since
                    self.b.since = time_for(date, self.anchor).get("happened_start") or self.said
                    age = str(NUMBER_WORDS.get(m.group("turns").casefold(), m.group("turns")))
                    self.b.fact(ref, "age", age, self.id)
                    self.b.since = held
        for m in _MARRIED_RE.finditer(s):
            a, b = (self.person(_clean_name(m.group(g) or "")) for g in (("a", "b") if m.group("a") else ("a2", "b2")))
            if a and b and a != b and not _denial(s, m.start()):
                self.b.edge(a, b, "partner_of", self.id)

    def _pets(self, s: str) -> None:
        for m in _PET_APPOSITIVE_RE.finditer(s):
            name = _clean_name(m.group("pname"))
            if name and not self.is_person(name):
                self.b.fact(self.subject(s, 0), "has_pet", f"{_PETS[m.group('pet')]} {name}", self.id)
        for m in _PET_RE.finditer(s):
            pet = _PETS.get(" ".join(m.group("pet").casefold().split()))
            if pet is None:
                continue
            pet_name = _clean_name(m.group("pname") or "")
            value = f"{pet} {pet_name}" if pet_name and not self.is_person(pet_name) else pet
            self.b.fact(self.clause_subject(s, m.start()), "has_pet", value, self.id)


def _moved_tool(name: str, sentence: str) -> bool:
    """Whether a name after "moved to/from" is a tool ("moved the service to Postgres"), not a home."""
    key = name.casefold()
    return key in _TOOL_CANON or (key not in _PLACE_CANON and bool(_TECH_WORDS.search(sentence)))


def _diet(word: str) -> str:
    """One spelling per diet: "Gluten-free" and "gluten free", "celiac" and "coeliac"."""
    return word.casefold().replace("-", " ").replace("celiac", "coeliac")


def _named_pets_only(facts):
    """The facts without a bare "dog" when the same facts name it ("dog Biscuit"): one pet, not two."""
    named = {f["value"].split()[0].casefold() for f in facts if f["key"] == "has_pet" and " " in f["value"]}
    return [f for f in facts if not (f["key"] == "has_pet" and f["value"].casefold() in named)]


def _texts(event: dict[str, Any]) -> list[str]:
    texts = [event.get("title"), event.get("summary"), *(event.get("quotes") or [])]
    out = []
    for text in texts:
        if isinstance(text, str) and text.strip():
            text = text.strip()
            if text.endswith(("…", "...")):
                # A clipped text ends mid-sentence: keep only its complete sentences.
                cut = max(text.rfind(". "), text.rfind("! "), text.rfind("? "), text.rfind("。"))
                text = text[: cut + 1] if cut > 0 else ""
            if text:
                out.append(text)
    return out


def _not_people(events: list[dict[str, Any]], nodes: Any) -> set[str]:
    """Keys of names that are places, organisations, projects, tools or pets in this batch.

    Extractors put any capitalised name into ``participants``; these never become people.
    """
    keys: set[str] = set()
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, dict):
            continue
        if node.get("type") not in (None, "person"):
            for name in [node.get("name"), *(node.get("aliases") or [])]:
                if isinstance(name, str):
                    keys.add(_key(name))
        for fact in node.get("facts") or []:
            if isinstance(fact, dict) and fact.get("key") == "has_pet" and isinstance(fact.get("value"), str):
                words = fact["value"].split()
                if len(words) > 1:
                    keys.add(_key(" ".join(words[1:])))  # "dog Biscuit": Biscuit is a pet
    keys.update(_key(breed) for breed in _PETS)  # "a Chihuahua", "our Jack Russell": a breed is nobody
    sentences = dict.fromkeys(
        part.strip() for event in events for text in _texts(event) for part in _SENTENCE_SPLIT.split(text)
    )
    single = (
        (_KNOWN_TOOL_RE, 1),
        (_ANY_CASE_TOOL_RE, 1),
        (_KNOWN_PLACE_RE, 1),
        (_IN_NAME_RE, 1),
        (_LIVE_RE, 1),
        (_MOVE_RE, 1),
        (_WORK_AT_RE, "org"),
        (_WORK_AT_RE, "org2"),
        (_ROLE_AT_RE, "org"),
        (_UNIVERSITY_OF_RE, 1),
        (_PET_RE, "pname"),
        (_PLACE_NOUN_RE, 1),
        (_PARTICLE_BEFORE_RE, 1),
        (_PARTICLE_AFTER_RE, 1),
        (_TRAVEL_PLACE_RE, 1),
        (_PET_APPOSITIVE_RE, 1),
        (_MOVE_FROM_RE, "old"),
        (_MOVE_FROM_RE, "new"),
        (_LEAVE_ORG_RE, "org"),
        (_LEAVE_ORG_RE, "org2"),
    )
    for text in sentences:
        for m in _PROJECT_RE.finditer(text):
            if m.group("surface"):
                keys.add(_key(m.group("surface")))
            keys.add(_key(_clean_name(m.group("name") or m.group("name2") or "")))
        for m in _ORG_SUFFIX_RE.finditer(text):
            keys.update({_key(m.group(1)), _key(f"{m.group(1)} {m.group(2)}")})
        for m in _GOES_BY_RE.finditer(text):
            keys.add(_key(_goes_by(m)[1]))
        for m in _THING_RE.finditer(text):
            for name in filter(None, m.groups()):
                if not search_at_end(_PERSON_BEFORE_RE, text, m.start(), PERSON_BEFORE_REACH):
                    keys.update(_key(_clean_name(part)) for part in [name, *name.split()])
        for m in _THING_OBJECT_RE.finditer(text):
            keys.add(_key(_clean_name(m.group(1))))  # "played Catan", "bought Nike shoes": a game, a brand
        for m in _NAMED_AS_RE.finditer(text):
            # each name of a list, and the pieces of "Counter-Strike" (a reader may have cut it at its hyphen)
            for name in filter(None, m.groups()):
                pieces = re.split(r",\s+|,?\s+(?:and|or)\s+|-", name)
                words = [w for piece in pieces for w in piece.split()]
                keys.update(_key(_clean_name(part)) for part in [name, *pieces, *words])
        for m in _QUOTED_TITLE_RE.finditer(text):
            keys.update(_key(_clean_name(part)) for part in [m.group(1), *m.group(1).split()] if part[:1].isupper())
        for m in _TITLE_OF_RE.finditer(text):
            keys.update({_key(m.group(1)), _key(m.group(2))})  # "Game of Thrones", "Cliffs of Moher": a title or place
        for m in _TEAM_RE.finditer(text):
            keys.add(_key(_clean_name(m.group(1))))  # "moved to the Orion team": a team, not a person
        for m in _PLACE_NOUN_RE.finditer(text):
            # Extractors may cut "São Jorge Castle" into "São Jorge" and "Castle": neither is a person.
            name, _, noun = m.group(1).rpartition(" ")
            keys.update({_key(_clean_name(name)), _key(noun)})
        people = _people_with_particles(text)
        for pattern, group in single:
            for m in pattern.finditer(text):
                if not m.group(group):
                    continue
                if pattern in (_PARTICLE_BEFORE_RE, _PARTICLE_AFTER_RE) and any(
                    start <= m.start(group) < end for start, end in people
                ):
                    continue
                keys.add(_key(_clean_name(m.group(group))))
        for m in _VISIT_RE.finditer(text):
            if _STRICT_VISIT.match(m.group(0)):
                keys.add(_key(_clean_name(m.group(1))))
        for m in _USE_RE.finditer(text):
            if _PLAIN_USE.match(m.group("verb")) and not re.match(r"['’]s\b", text[m.end() :]):
                keys.add(_key(_clean_name(m.group("tool"))))
    keys.discard("")
    return keys


# Words that follow a person who starts a sentence ("Ann is", "Ann moved", "Ann's").
_SUBJECT_NEXT = lexicon.words("after_subject")
_VERBISH = re.compile(r"^[a-z]+(?:ed|[^s]s)$")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;)\]\d\"“”\n-]\s*)$")
SENTENCE_START_REACH = 1


def _looks_like_person(name: str, text: str, not_people: set[str], first: bool = True) -> bool:
    """A participant is a person unless it is a pronoun or role, a known non-person name, or a
    capitalised common word (it appears only at sentence starts, or also in lower case)."""
    if not name or name.casefold() in _PRONOUNS or not any(ch.isalpha() for ch in name):
        return False
    key = _key(name)
    words = name.split()
    if key in not_people or name.casefold() in _PLACE_CANON or name.casefold() in _TOOL_CANON:
        return False
    if words[0] == "Project" or words[-1].rstrip(".") in _ORG_SUFFIX_WORDS or re.search(rf"{WEB_SUFFIX}$", name):
        return False
    if not words[0][0].isupper():
        return not words[0][0].islower()  # lower-case Latin is no name; scripts without case pass
    if len(words) > 1:
        if words[-1] in _PLACE_NOUNS:
            return False
        if any(re.fullmatch(_PARTICLES, w) for w in words) and any(_key(w) in not_people for w in words):
            return False  # "Largo do Chafariz de Dentro": its parts around the particles are no people
        spots = [m.start() for m in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]
        if spots and all(search_at_end(_ARTICLE_BEFORE, text, at, ARTICLE_BEFORE_REACH) for at in spots):
            return False  # "the Night Watch", "a Golden Globe": full names take no article
        return not any(w in _NOT_NAMES for w in words if w.rstrip(".") not in ABBREVIATIONS)
    word = words[0]
    if word in _NOT_NAMES or (word.endswith("s") and word[:-1] in _NOT_NAMES) or word.casefold() in _ROLE_NOUNS:
        return False  # "a fellow Chef": a role, not a name
    if re.search(rf"(?<![\w-]){re.escape(word.lower())}(?![\w-])", text):
        return False  # "team" in lower case: a common word, not a name
    spots = [m.start() for m in re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text)]
    if not spots:
        if re.search(rf"(?<![\w-]){re.escape(word)}-[a-z]|\b[a-z][\w]*-{re.escape(word)}(?![\w-])", text):
            return False  # only inside "Middle-earth", "e-Bay": a piece of a word, not of a name ("Jean-Luc")
        return first  # not in the text: the first participant is the speaker
    for at in spots:
        if _NOT_BEFORE_PERSON.search(text[:at]):
            continue
        if not search_at_end(_SENTENCE_START, text, at, SENTENCE_START_REACH):
            return True  # capitalised in mid-sentence: a name
        rest = text[at + len(word) :]
        after = re.match(r"(?:['’]s\b|\s+([a-z]+)\b)", rest)
        if after and (after.group(1) is None or after.group(1) in _SUBJECT_NEXT or _VERBISH.match(after.group(1))):
            return True  # "Ann moved …", "Ann's …": the subject of its sentence
        if _PAIR_SUBJECT.match(rest):
            return True  # "Tomás and Maya are thinking …" (a card's "Tomás and I")
        said_to_be = _WHO_APPOSITIVE.match(rest)
        if said_to_be and any(w in _KIN_OR_CIRCLE or w in _ROLE_NOUNS for w in said_to_be.groups() if w):
            return True  # "Ana, a friend from my hometown, …", "Ana, my sister, …", "Ana, a nurse, …"
    return False


# A person named and then said to be someone's relation or what they do.
_WHO_APPOSITIVE = re.compile(r",\s+(?:my|our|his|her|their|a|an|the)\s+(?:([a-z]+)\s+)?([a-z]+)\b")
_KIN_OR_CIRCLE = lexicon.words("kin_or_circle")


# Two names opening a sentence as its subject: "Tomás and Maya are …", "Ann and Ivo went …".
_PAIR_SUBJECT = re.compile(
    r"\s+and\s+[A-Z][\w'’-]*\s+(?:are|were|have|had|will|would|can|could|both|went|got|made|"
    r"took|decided|plan|planned|love|loved|like|liked|want|wanted|need|needed|live|lived)\b"
)


def _candidates(event: dict[str, Any], speakers: set[str] = frozenset()) -> list[str]:
    """The event's participant names, pronouns and role words left out unless one is a speaker
    ("User": a user whose messages carry no name)."""
    names = event.get("participants")
    if not isinstance(names, list):
        names = (event.get("temporal") or {}).get("participants") or []
    out = [" ".join(n.split())[:120] for n in names if isinstance(n, str)]
    return [n for n in out if n and (n.casefold() not in _PRONOUNS or _key(n) in speakers)]


def _people(
    event: dict[str, Any], texts: list[str], not_people: set[str], known: set[str], speakers: set[str] = frozenset()
) -> list[str]:
    """The event's participants that are people. A name absent from the text counts when it is
    listed first (the speaker), the list is short (a conversation), or it is a known person."""
    joined = "\n".join(texts)
    candidates = _candidates(event, speakers)
    people: list[str] = []
    for index, name in enumerate(candidates):
        absent_ok = index == 0 or len(candidates) <= 3 or _key(name) in known
        if _key(name) in {_key(p) for p in people}:
            continue
        if (
            _key(name) in known
            and _key(name) not in not_people
            or _looks_like_person(name, joined, not_people, absent_ok)
        ):
            people.append(name)
    return people


def _placed_elsewhere(
    events: list[dict[str, Any]],
    texts: dict[int, list[str]],
    not_people: set[str],
    known: set[str],
    speakers: set[str],
    mentions: Any,
) -> set[str]:
    """Keys of the batch's would-be people that what other events say shows to be no people: the
    batch's own sentences may not tell ("KLM from Schiphol at 07:40") where another event does
    ("the taxi to Schiphol"). Asked once a name, only for a name that is no known person."""
    out: set[str] = set()
    asked: set[str] = set()
    for event in events:
        joined = "\n".join(texts[event["id"]])
        for name in _candidates(event, speakers):
            key = _key(name)
            if key in asked or key in known or key in not_people:
                continue
            asked.add(key)
            if not _looks_like_person(name, joined, not_people):
                continue
            elsewhere = [{"id": 0, "title": "", "summary": text, "quotes": []} for text in mentions(name)]
            if elsewhere and key in _not_people(elsewhere, []):
                out.add(key)
    return out


def project_graph_offline(context: dict[str, Any]) -> dict[str, Any]:
    """A GRAPH_SCHEMA proposal from the context's events, by deterministic rules."""
    builder = _Builder()
    events = [e for e in context.get("events", []) if isinstance(e, dict) and isinstance(e.get("id"), int)]
    nodes = context.get("nodes") if isinstance(context.get("nodes"), list) else []
    speakers = {_key(n) for n in context.get("speakers") or [] if isinstance(n, str)}
    not_people = _not_people(events, nodes) - speakers  # whoever speaks is a person
    texts = {e["id"]: _texts(e) for e in events}
    context_people = [
        name
        for n in nodes
        if isinstance(n, dict) and n.get("type") == "person"
        for name in [n.get("name"), *(n.get("aliases") or [])]
        if isinstance(name, str)
    ]
    known = {_key(n) for n in context_people} | speakers
    if callable(context.get("mentions")):
        not_people |= _placed_elsewhere(events, texts, not_people, known, speakers, context["mentions"])
    first_pass = [p for e in events for p in _people(e, texts[e["id"]], not_people, known, speakers)]
    known |= {_key(p) for p in first_pass}
    people = {e["id"]: _people(e, texts[e["id"]], not_people, known, speakers) for e in events}
    by_first: dict[str, set[str]] = {}
    for name in context_people + [p for names in people.values() for p in names]:
        if " " in name:
            by_first.setdefault(_key(name.split()[0]), set()).add(name)
    full_names = {k: next(iter(v)) for k, v in by_first.items() if len({_key(n) for n in v}) == 1}
    for event in events:
        # Participants the rules could not call people nor anything else ("Ana met Tom": a sentence
        # opener) still count when a "she" might mean them.
        unsure = (
            {_key(p) for p in event.get("participants") or [] if isinstance(p, str)}
            - not_people
            - {_key(p) for p in people[event["id"]]}
        )
        _EventReader(builder, event, texts[event["id"]], people[event["id"]], full_names, unsure, speakers).read()
    return builder.proposal(len(events))


__all__ = ["project_graph_offline"]
