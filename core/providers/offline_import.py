"""The offline decider: what to do with one imported memory, from its Top-K stored matches.

Deterministic and lexical. Each statement is read as *subject* (who or what it is about), *slot*
(which attribute: the kinds of fact its words state — home, job, diet, likes … folded over common
synonyms — and the kinds of value it gives: a drink, a tool, an instrument …) and *values* (names,
numbers and the remaining content words). Each match is read as its subject's part of the card, and
measured by how much of the candidate's content it states. ``_decide_slots`` decides from subject,
slot and values; ``_review`` then keeps a supersede or conflict only for the candidate's own subject
and a slot the card gives a value for, with a change word or a later time for a supersede, turns
what a card already states into an ignore or merge, and sets the confidence from how strong the
match is. docs/imports.md has the table of decisions and confidences.

The output has the shape of the provider's ``decide_external_memory`` answer.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any, Iterable

from core.search.analyze import STOP_WORDS, stem
from core.text import NUMBER_WORDS
from core.timeutil import period_bounds

# ----------------------------------------------------------------------------- lexicons

# Predicate classes: word forms that state the same kind of fact. Folding them lets
# "lives in", "is based in" and "has her home in" meet.
_PREDICATES: dict[str, str] = {}
for _cls, _words in {
    "live": "live lives living lived reside resides resided residing resident based home homes moved move moves "
    "moving relocated relocate relocates relocating settled settle stays staying house apartment flat "
    "neighborhood neighbourhood hometown residence",
    "work": "job jobs employed employer employee employs hired company firm boss",
    "like": "like likes liked love loves loved loving enjoy enjoys enjoyed enjoying fond fan fans adore adores "
    "adored passionate keen",
    "prefer": "prefer prefers preferred preference preferences favorite favourite favorites favourites rather",
    "dislike": "dislike dislikes disliked hate hates hated detest detests avoid avoids avoided",
    "use": "use uses used using utilize utilizes utilise rely relies relied relying depend depends tool tools "
    "app apps software",
    "own": "own owns owned owner",
    "drink": "drink drinks drinking drank sip sips",
    "pet": "pet pets",
    "diet": "vegetarian vegan pescatarian eat eats eating ate diet meat meats",
    "allergy": "allergic allergy allergies intolerant intolerance react reacts reaction reactions",
    "language": "speak speaks speaking spoke fluent fluently language languages native tongue",
    "learn": "learn learns learning learned learnt study studies studying studied student course courses "
    "lesson lessons class classes tutor",
    "play": "play plays playing played player players practice practices practicing practise practises "
    "practising practised instrument",
    "birthday": "birthday birthdays born birth birthdate",
    "family": "married marry wife husband spouse partner partners girlfriend boyfriend engaged fiance "
    "fiancee daughter son sister brother mother father mom dad kids children child",
    "meet": "meeting meetings meet meets sync syncs standup standups call calls catchup weekly scheduled schedule",
    "drive": "drive drives driving drove car cars bike bikes cycle cycles cycling commute commutes commuting ride "
    "rides",
    "school": "university college degree graduated graduate school major studied alumni",
    "hobby": "hobby hobbies pastime pastimes",
    "goal": "plan plans planning planned goal goals want wants wanted aim aims hope hopes intend intends dream",
    "deadline": "deadline deadlines due launch launches release releases ship ships shipping",
    "name": "named called name nicknamed",
    "age": "age aged",  # "old" alone is no age ("the old dates"): _AGE_PHRASE reads "34 years old"
    "read": "read reads reading book books novel novels author",
    "watch": "watch watches watching watched show shows series movie movies film films",
    "wake": "wake wakes waking sleep sleeps bed bedtime",
    "travel": "travel travels traveling travelling trip trips visit visits visited vacation holiday",
}.items():
    for _w in _words.split():
        _PREDICATES.setdefault(_w, _cls)

# Facts that do not change over time: a different value is a contradiction, not an update.
_IMMUTABLE = frozenset({"birthday"})

# Kinds of values: two different members of one kind in the same slot are a change of value
# (tea → coffee, designer → manager), not a rewording.
_VALUE_KINDS: dict[str, str] = {}
for _kind, _words in {
    "weekday": "monday tuesday wednesday thursday friday saturday sunday weekend weekends",
    "drink": "tea coffee espresso latte matcha water juice beer wine soda milk cocoa chocolate",
    # "fish" is food more often than a pet ("started eating fish again"); "goldfish" is the pet.
    "food": "pizza pasta sushi ramen tacos curry burgers salad steak chocolate cheese bread rice noodles fish",
    "animal": "dog cat rabbit hamster parrot horse goldfish turtle snake bird puppy kitten",
    "instrument": "piano guitar violin cello drums flute saxophone trumpet ukulele bass harp",
    "sport": "running tennis football soccer basketball swimming cycling climbing yoga golf hiking skiing "
    "surfing chess boxing rowing",
    "language": "english spanish french german italian portuguese japanese chinese mandarin korean arabic "
    "russian hindi dutch swedish polish greek turkish",
    "role": "engineer developer designer manager director analyst scientist researcher teacher nurse doctor "
    "lawyer accountant consultant writer editor architect intern lead founder ceo cto student "
    "professor chef",
    "color": "red blue green yellow black white purple orange pink grey gray brown",
    "time": "morning mornings evening evenings night nights afternoon afternoons",
    "diet": "vegetarian vegan pescatarian omnivore",
    "vehicle": "car bike bicycle scooter motorcycle train bus",
    "tool": "notion obsidian trello jira asana todoist evernote linear slack teams github gitlab figma excel sheets "
    "vscode vim emacs pycharm xcode postgres postgresql mysql sqlite mongodb redis docker kubernetes python "
    "javascript typescript rust kotlin java zoom discord whatsapp telegram signal spotify",
    "family": "wife husband partner spouse son daughter brother brothers sister sisters mother father grandmother "
    "grandfather cousin friend friends roommate roommates colleague colleagues",
}.items():
    for _w in _words.split():
        _VALUE_KINDS.setdefault(_w, _kind)

_KIND_BY_STEM = {stem(w): k for w, k in _VALUE_KINDS.items()}
# Kinds whose words are also the predicate: "vegetarian" and "pescatarian" are both diets and
# two different diets.
_VALUE_PREDICATES = frozenset({"diet"})
# Number words read as the digits they stand for, so "aged 6" and "six-year-old" state one value
# ("one" stays out: "the one she likes" is no number).
_NUMBER_WORDS = {w: str(n) for w, n in NUMBER_WORDS.items() if w != "one"}
_NUMBER = rf"(?:\d{{1,3}}|{'|'.join(sorted(_NUMBER_WORDS, key=len, reverse=True))})"
# "Ivy is seven", "turned 40 in May": a bare number after the verb is an age.
_AGE_PHRASE = re.compile(
    r"\b(?:is|was|turns|turned|turning|will be)\s+(?:now\s+|just\s+|almost\s+|nearly\s+)?"
    rf"{_NUMBER}"
    r"(?=\s*(?:$|[.,;!?]|now\b|today\b|this\b|next\b|last\b|on\b|in\b|years?\b))"
    # "is a six-year-old", "34 years old"; not "a six-year-old daughter" (the daughter's age, not the subject's)
    rf"|\b{_NUMBER}[-\s]years?[-\s]old\b(?!\s+[a-z])",
    re.IGNORECASE,
)
# What a relative clause says is said of the name before it: "Lena, who lives in Amsterdam".
_RELATIVE = re.compile(r"\b([A-Z][\w'’-]*)\s*,?\s+(?:who|whose)\s+([^,.;!?]+)")
# An age that describes someone named after it: "their six-year-old daughter Ivy" is Ivy's age.
_AGE_OF = re.compile(
    rf"\b{_NUMBER}[-\s]years?[-\s]old\s+"
    r"(?:[a-z]+\s+){0,2}([A-Z][\w'’-]*)"
)
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_FILLER = frozenset(
    """really very quite pretty much many lot lots always usually often mostly generally also still currently
    now actually basically truly definitely particularly especially well good great big new old
    person people someone user assistant thing things stuff kind sort type time times day days
    year years month months week weeks lately these those nowadays today every each all whole
    badly regularly typically sometimes frequently occasionally normally recently
    go goes went going gone do does did doing done take takes took taking get gets got getting make makes made
    near around close next across behind within without via per
    hot give gives gave keep keeps kept have has had having spend spends spent come comes came put puts""".split()
)

_NEGATION = re.compile(
    r"\b(not|never|no|none|nobody|nothing|neither|nor|isn['’]?t|aren['’]?t|wasn['’]?t|weren['’]?t|"
    r"doesn['’]?t|don['’]?t|didn['’]?t|won['’]?t|can['’]?t|cannot|hasn['’]?t|haven['’]?t|hadn['’]?t)\b",
    re.IGNORECASE,
)
_STOPPED = re.compile(r"\b(no longer|not any ?more|any ?more|no more|stopped|quit|gave up|left)\b", re.IGNORECASE)
_UPDATE = re.compile(
    r"\b(now|currently|these days|nowadays|no longer|not any ?more|any ?more|moved|moving|relocated|relocating|"
    r"switched|switching|changed|changing|has since|have since|since|as of|recently|started|starting|began|"
    r"became|become|promoted|upgraded|replaced|instead|updated?|latest|new|newly|from now on|going forward|"
    r"left|quit|stopped|no more|transferred|took over|took a|joined|adopted|got a|bought a|at present|"
    r"postponed|delayed|pushed (back|out)|rescheduled|brought forward|moved (up|to)|renamed|upgraded to)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(actually|correction|corrected|in fact|mistaken(ly)?|by mistake|wrong|wrongly|incorrect(ly)?|"
    r"turns out|turned out|confirmed|not \w+ but|to clarify|clarification)\b|,\s*not\s+\w",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(used to|formerly|previously|former|back then|in the past|years ago|as a (child|kid|teenager)|"
    r"once (lived|worked|had|owned)|before (moving|joining|switching))\b",
    re.IGNORECASE,
)

_SMALL_TALK = re.compile(
    r"^\W*((user|they|he|she|i)\s+)?(said|says|say)?\s*(hi|hello|hey|good (morning|evening|night|afternoon)|"
    r"thanks|thank you|bye|goodbye)\b"
    r"|\b(greeted|thanked|said (hi|hello|goodbye|thanks)|small talk|chit-?chat|chatted (about|briefly)|"
    r"(asked|asks|ask) (for|about|me|the assistant|how|what|whether|if|a question)|"
    r"(told|tells|tell) (a|me a) joke|"
    r"(the )?assistant (explained|suggested|answered|helped|said|told|recommended|provided|gave|wrote)|"
    r"talked about (the weather|random|various|nothing|stuff|things)|"
    r"(had|has) a (quick |short |brief )?(chat|conversation)|"
    r"(was|is) (just )?(curious|wondering)|(tested|testing) (the|this) (assistant|chat|bot)|"
    r"(conversation|chat) (started|ended|about)|"
    # Remarks on the exchange itself: "encouraged each other", "wished the assistant a good weekend".
    r"(encouraged|wished|thanked|congratulated|reassured|motivated|greeted|cheered on) (each other|one another)|"
    r"wished (the assistant|you|me|them|him|her|each other) (a |an )?(good|great|nice|happy|luck)|"
    r"^(talked|chatted|spoke) about)\b",
    re.IGNORECASE,
)
_TRANSIENT = re.compile(
    r"\b(today|tonight|right now|this (morning|afternoon|evening|week)|at the moment|for now|just now)\b", re.IGNORECASE
)
_MOOD = re.compile(
    r"\b(tired|hungry|sleepy|bored|busy|stressed|grumpy|cold|hot|sick|thirsty|in a hurry|in a rush|running late|"
    r"feeling|feels|felt|mood)\b",
    re.IGNORECASE,
)
_VAGUE = re.compile(
    r"\b(various|something|some stuff|a few things|miscellaneous|random|general topics)\b", re.IGNORECASE
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_CLAUSE = re.compile(
    r"[.;:!?。！？]+|,?\s+\b(?:and|but|while|although|whereas|though|because|since|"
    r"so that|due to)\b\s+|\s+[—–]\s+|,\s+(?=(?:not|never)\b)",
    re.IGNORECASE,
)
_WEAK_NEGATION = frozenset({"no", "nothing", "none"})
_SENT_SPLIT = re.compile(r"(?<=[.!?;:。！？])\s+|\s+[—–-]\s+|\n+|,\s+but\s+|;")


# Facts that hold one value at a time (a different value replaces or contradicts the old
# one); other kinds (likes, allergies, instruments, languages …) accumulate values.
_FUNCTIONAL = frozenset({"live", "work", "role", "birthday", "age", "diet", "drink", "prefer", "deadline"})
# Predicates too general to say two statements are about the same kind of fact.
_WEAK = frozenset({"name", "own"})
# Predicates that rephrase rather than add ("enjoys" → "favourite"): not new detail by themselves.
_SOFT = frozenset({"like", "prefer", "use", "hobby", "learn", "play"})
_ROLE_PHRASE = re.compile(
    r"\b(works?|worked|working) as\b|\bjob title\b|\bprofession\b|\bcareer\b|"
    r"\b(a )?living as\b|\boccupation\b|\bpromoted\b",
    re.IGNORECASE,
)
_EMPLOYER_PHRASE = re.compile(
    r"(?i:\b(works?|worked|working|job|jobs|employed|employee|employer|joined|hired)\b)"
    r"((?i:(\s+\w+)?\s+(at|for|by|with)\b)|\s+[A-Z])|(?i:\bemployer\b)|(?i:\b(left|joined))\s+[A-Z]"
    r"|(?i:\bwhere\s+\w+\s+works?\b)"
)
_USER = "user"
# Verbs that end the subject of a statement ("Maya | lives …", "Works | at …").
_VERBISH = frozenset(
    """is are was were be been has have had does do did works work worked working goes went
    gets got keeps kept takes took makes made uses used wants needs""".split()
)
_USER_SUBJECT = re.compile(r"^\W*(the\s+)?(user|i|my)\b", re.IGNORECASE)
_OTHER_SUBJECT = re.compile(r"^\W*(he|she)\b", re.IGNORECASE)  # not "they" (often the user's family) nor "their …"
_SPEAKER = re.compile(r"\b(you|your|i|my|me|we|our)\b", re.IGNORECASE)
_KIN_NAMED = re.compile(
    r"^\W*(?:[A-Z][\w-]*['’]s|(?i:(?:the\s+)?user['’]s|my|his|her|their))\s+(?:[a-z-]+\s+)?"
    r"(?i:sister|brother|mother|father|mom|mum|dad|son|daughter|wife|husband|partner|cousin|aunt|uncle|niece|"
    r"nephew|grandmother|grandfather|grandma|grandpa|friend|neighbou?r|colleague|roommate|boss)\s+"
    r"([A-Z][\w'’-]*)"
)
_SOMEONE = "~someone"  # the lead of a statement about a person named elsewhere: the same as nobody's


# ----------------------------------------------------------------------------- facts


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "")


def _plain(word: str) -> str:
    """Without accents: another assistant may write "Tomas" for "Tomás"."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def _bare(word: str) -> str:
    """Lower case without a possessive or contraction tail ("Maya's" → "maya")."""
    low = _plain(word.casefold().replace("’", "'"))
    return low.split("'")[0] if "'" in low else low


@dataclass
class Fact:
    """A statement read for comparison."""

    text: str
    participants: set[str]
    lead: str  # who it is about: the first named participant, else the first name, else the user
    names: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)  # names in the order they appear
    preds: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    anchors: set[str] = field(default_factory=set)
    negated: bool = False
    clauses: list[tuple[set[str], str]] = field(default_factory=list)  # (tokens, '' | 'weak' | 'strong')
    stopped: bool = False
    update: bool = False
    correction: bool = False
    past: bool = False
    time: tuple[float, float] | None = None
    user: frozenset[str] = frozenset()  # the words of the one name the user goes by, when known
    names_user: bool = False  # led by the user's name ("Maya prefers …"), not by no name at all
    # Kinds of fact stated only of someone named inside the statement, not of its lead: "a sister named
    # Lena who lives in Amsterdam" (Lena's residence), "their six-year-old daughter Ivy" (Ivy's age).
    preds_of: dict[str, set[str]] = field(default_factory=dict)
    title: str = ""  # the title as given, for words the compared statement may leave out ("only child")

    @property
    def people(self) -> set[str]:
        return self.participants | self.names | {self.lead}


def _time(temporal: dict[str, Any] | None) -> tuple[float, float] | None:
    temporal = temporal or {}
    for key in ("happened_start", "mentioned_at"):
        value = temporal.get(key)
        if isinstance(value, str):
            bounds = period_bounds(value[:10] if len(value) > 10 else value, timezone.utc)
            if bounds:
                return bounds
    return None


def _is_name(words: list[str], index: int, known: set[str]) -> bool:
    word = words[index]
    if not word[:1].isupper():
        return False
    low = _bare(word)
    if low in known:
        return True
    if (
        low in STOP_WORDS
        or low in _PREDICATES
        or low in _FILLER
        or low in _MONTHS
        or low in _VALUE_KINDS
        or low in _VERBISH
    ):  # "Works as a designer": an export's subjectless statement opens with its verb
        return False
    if index > 0:
        return True
    nxt = _bare(words[index + 1]) if index + 1 < len(words) else ""
    if (
        known
        and any(_bare(w) in known for w in words[1:])
        and (nxt not in ("is", "was", "has", "had", "and") or low.endswith("ing"))
    ):
        # "Besides classes, Jon's studio offers …", "Acting was Joanna's first passion": the
        # sentence names the person it is about later; its capitalised first word is just a word.
        return "'" in word or "’" in word
    # Sentence-initial: a name when followed by a verb-like word ("Maya lives", "Ben's").
    nxt = _bare(words[index + 1]) if index + 1 < len(words) else ""
    return "'" in word or "’" in word or nxt in ("is", "was", "has", "had", "and") or nxt.endswith(("s", "ed"))


def _statement(title: str, summary: str) -> str:
    """What is compared: the summary (the fact as a sentence); a short summary borrows the title."""
    if len(_WORD.findall(summary)) >= 3:
        return summary
    return f"{title}. {summary}" if title and _bare_words(title) - _bare_words(summary) else summary


def _phrase_kinds(text: str) -> set[str]:
    """The kinds of fact the phrases in ``text`` state ("works at", "as a nurse", "is seven")."""
    return {
        kind
        for phrase, kind in ((_EMPLOYER_PHRASE, "work"), (_ROLE_PHRASE, "role"), (_AGE_PHRASE, "age"))
        if phrase.search(text)
    }


def _kinds(text: str) -> set[str]:
    """The kinds of fact a piece of text states (the predicate words and phrases in it)."""
    return {_PREDICATES[low] for low in map(_bare, _WORD.findall(text)) if low in _PREDICATES} | _phrase_kinds(text)


def _attribute(fact: Fact, text: str) -> None:
    """Note the kinds of fact the statement gives only of someone named inside it (``preds_of``)."""
    rest = text
    for m in _AGE_OF.finditer(text):
        fact.preds_of.setdefault(_bare(m.group(1)), set()).add("age")
        fact.preds.add("age")
    for m in _RELATIVE.finditer(text):
        fact.preds_of.setdefault(_bare(m.group(1)), set()).update(_kinds(m.group(2)))
        rest = rest.replace(m.group(0), m.group(1))
    if fact.preds_of:
        main = _kinds(rest)
        fact.preds_of = {name: kinds - main for name, kinds in fact.preds_of.items() if kinds - main}


def read_fact(
    title: str,
    summary: str,
    temporal: dict[str, Any] | None = None,
    participants: Iterable[str] = (),
    known_names: set[str] | None = None,
    user: frozenset[str] = frozenset(),
    card: bool = False,
) -> Fact:
    """Read a title and summary into subject, predicate classes and value tokens. A statement led
    by the ``user``'s name ("Maya uses Notion") is about the user, as "Uses Notion" is."""
    text = _statement(_fold(title), _fold(summary))
    parts: list[str] = []
    for p in participants:
        if isinstance(p, str):
            parts += [_bare(w) for w in _WORD.findall(p) if _bare(w)]
    known = set(parts) | (known_names or set())
    order: list[str] = []
    fact = Fact(text=text, participants=set(parts), lead="", time=_time(temporal), title=_fold(title))
    plain = _STOPPED.sub(" ", text)
    fact.negated = bool(_NEGATION.search(plain))
    for clause in _CLAUSE.split(plain):
        found = {m.group(0).casefold() for m in _NEGATION.finditer(clause)}
        level = "strong" if found - _WEAK_NEGATION else ("weak" if found else "")
        tokens = set()
        for word in _WORD.findall(clause):
            low = _bare(word)
            tokens.add(f"@{_PREDICATES[low]}" if low in _PREDICATES else stem(low))
            tokens.add(low)
        fact.clauses.append((tokens, level))
    fact.stopped = bool(_STOPPED.search(text))
    fact.update = bool(_UPDATE.search(text))
    fact.correction = bool(_CORRECTION.search(text))
    fact.past = bool(_PAST.search(text))
    first_verb: int | None = None
    before_verb: list[str] = []
    position = 0
    for sentence in _SENT_SPLIT.split(_STOPPED.sub(" ", text)):
        words = _WORD.findall(sentence)
        for index, word in enumerate(words):
            low = _bare(word)
            position += 1
            if not low:
                continue
            if first_verb is None and (low in _VERBISH or (low in _PREDICATES and not _is_name(words, index, known))):
                first_verb = position
            low = _NUMBER_WORDS.get(low, low)
            if low.isdigit():
                if len(low) == 4 and 1900 <= int(low) <= 2100:
                    continue  # a year is time, compared separately
                fact.values.add(low)
                fact.anchors.add(low)
            elif _is_name(words, index, known):
                fact.names.add(low)
                fact.anchors.add(low)
                order.append(low)
                if first_verb is None:
                    before_verb.append(low)
            elif low in _MONTHS:
                continue
            elif low in _PREDICATES:
                if low == "living" and index > 0 and _bare(words[index - 1]) == "a":
                    fact.preds.add("work")  # "makes a living from gaming" says how, not where, someone lives
                    continue
                fact.preds.add(_PREDICATES[low])
                if _VALUE_KINDS.get(low) in _VALUE_PREDICATES:
                    fact.values.add(stem(low))  # "vegetarian" says what kind of fact and which value
            elif low in STOP_WORDS or low in _FILLER or len(low) < 2:
                continue
            else:
                value = stem(low)
                fact.values.add(value)
                if _KIND_BY_STEM.get(value) == "role":
                    fact.preds.add("role")
    fact.preds |= _phrase_kinds(text)
    _attribute(fact, text)
    fact.order = list(dict.fromkeys(order))
    lead_candidates = [n for n in before_verb if n in fact.participants] + before_verb
    if _USER_SUBJECT.match(text) or (not before_verb and first_verb is not None):
        lead_candidates = [_USER]  # "The user …", or no name before the verb: "Moved to Hamburg" is about the user
    if _OTHER_SUBJECT.match(text):
        lead_candidates = [_SOMEONE]  # "He's a physics teacher": about someone, not the user
    elif card and not before_verb and not _USER_SUBJECT.match(text) and not _SPEAKER.search(text):
        # A stored card is written in the third person ("Contemporary dance … speaks to Gina"): with no
        # name before its verb it is about the person it names, not the user.
        lead_candidates = [n for n in order if n in fact.participants][:1]
    kin = _KIN_NAMED.match(text)
    if kin and first_verb is not None:
        # "Maya's sister Clare lives in Lisbon" is about Clare, not Maya.
        lead_candidates = [_bare(kin.group(1))]
    fact.lead = (lead_candidates or [n for n in order if n in fact.participants] or order or parts or [_USER])[0]
    fact.values |= fact.names
    fact.user = user
    if user and (fact.lead == _USER or fact.lead in user):
        fact.names_user = fact.lead in user
        fact.lead = _USER
        fact.values -= user
        fact.names -= user
    return fact


# Where a card's parts about different people meet: sentence ends, joining words, and a comma before
# a name that does something ("Maya prefers an aisle seat, Tomás likes the window"), not before an
# apposition ("Priya Raman, Maya's manager").
_PART_SPLIT = re.compile(
    r"(?<=[.!?;:。！？])\s+|;|,?\s+\b(?:and|but|while|whereas|so)\b\s+"
    r"|,\s+(?=[A-Z][^\s,'’]*(?:\s+[A-Z][^\s,'’]*)?\s+[a-z]+(?:s|ed)\b)"
)


@dataclass
class CardView:
    """A stored card as one candidate reads it."""

    fact: Fact  # what the card says about the candidate's subject (the whole card when it is about one)
    ended: set[str]  # values of the subject's parts that say they have ended ("no longer uses Notion")
    whole: Fact | None = None  # the whole card, when ``fact`` is only the subject's part of it


def card_view(match: dict[str, Any], cand: Fact, known: set[str]) -> CardView:
    """Read a stored card for ``cand``. A conversation card often speaks of several people ("Maya
    prefers an aisle seat, Tomás likes the window"): compared whole, Tomás's window would make
    "Maya prefers window seats" a fact the card already holds."""
    whole = read_fact(
        match.get("title", ""),
        match.get("summary", ""),
        match,
        match.get("participants") or (),
        known,
        cand.user,
        card=True,
    )
    pieces = [p for p in _PART_SPLIT.split(whole.text) if p and _WORD.search(p)] or [whole.text]
    people = known | whole.participants
    # With the user's name known, "the user" is a subject like any other: their part of a card is theirs.
    knows_user = bool(cand.user)
    subject = cand.lead if cand.lead != _USER or knows_user else whole.lead

    def ended(parts: list[str]) -> set[str]:
        # What ended is what the clause holding "no longer" / "anymore" names ("pescatarian, not
        # vegetarian anymore": vegetarian), or a "not …" right after a "now" ("pescatarian now, not
        # vegetarian"), not the whole part.
        gone = [
            clause
            for part in parts
            for before, clause in _clause_pairs(part)
            if _STOPPED.search(clause) or (_NOT_AFTER_NOW.match(clause) and _NOW.search(before))
        ]
        return set().union(*(read_fact("", clause, None, (), people, cand.user).values for clause in gone)) - {subject}

    if len(pieces) == 1:  # one part: the whole card is what it says of anyone
        return CardView(whole, ended(pieces))
    read = [(piece, read_fact("", piece, None, (), people, cand.user)) for piece in pieces]

    def whose(fact: Fact) -> str:
        # A part naming no one ("He's four and limping") may be anyone's; one naming the user is the user's.
        return fact.lead if fact.lead != _USER or fact.names_user else ""

    mine = [(piece, fact) for piece, fact in read if whose(fact) in (subject, "")]
    gone = ended([piece for piece, _ in mine])
    leads = {whose(fact) for _, fact in read} - {""}
    if (cand.lead == _USER and not knows_user) or len(leads) < 2 or not any(whose(f) == subject for _, f in mine):
        return CardView(whole, gone)
    own = read_fact(
        "",
        ". ".join(piece.rstrip(".") for piece, fact in mine if whose(fact) == subject),
        match,
        match.get("participants") or (),
        known,
        cand.user,
        card=True,
    )
    return CardView(own, gone, whole)


_NOW = re.compile(r"\bnow\b", re.IGNORECASE)
_NOT_AFTER_NOW = re.compile(r"\s*not\b", re.IGNORECASE)


def _clause_pairs(part: str) -> list[tuple[str, str]]:
    """The comma clauses of a part, each with the one before it ("" for the first)."""
    clauses = part.split(",")
    return list(zip([""] + clauses[:-1], clauses))


def _bare_words(text: str) -> set[str]:
    return {_bare(w) for w in _WORD.findall(text)} - STOP_WORDS


# ----------------------------------------------------------------------------- comparison


@dataclass
class Relation:
    match: dict[str, Any]
    fact: Fact
    flip: str  # '' when both agree in polarity on what they share, else 'weak' or 'strong'
    same_subject: bool
    same_pred: bool
    shared: set[str]
    new: set[str]
    missing: set[str]
    overlap: float
    topic: float
    kinds: set[str] = field(default_factory=set)  # kinds of fact both state of the subject
    subject: set[str] = field(default_factory=set)  # the one subject both statements are about
    cover: float = 0.0  # weighted share of the candidate's content the card also states
    extra: float = 0.0  # weight of the candidate's content the card does not state
    rank: int = 0  # the match's place in the search's order
    hits: int = 0  # how many parts of the candidate's content the card states
    back: float = 0.0  # weighted share of the card's content the candidate states
    said: set[str] = field(default_factory=set)  # everything the whole card states (values, @kinds)


def relate(cand: Fact, match: dict[str, Any], fact: Fact) -> Relation:
    shared_names = (cand.names & fact.people) | (fact.names & cand.people)
    ranked = cand.order + sorted(shared_names - set(cand.order))
    # One subject: the lead both statements share, else the first shared name the candidate lists
    # as a participant, else a shared name one of them leads with. Never a name only the stored card
    # lists: its participants include the places and things it names ("flies from Amsterdam").
    if cand.lead == fact.lead:
        subject = {cand.lead}
    else:
        subject = {
            next(
                (n for n in ranked if n in shared_names and n in cand.participants),
                next((n for n in ranked if n in shared_names and n in (cand.lead, fact.lead)), ""),
            )
        } - {""}
    same_subject = bool(subject)
    cv, mv = cand.values - subject, fact.values - subject
    shared, new, missing = cv & mv, cv - mv, mv - cv
    # Kinds of fact either statement gives only of someone else ("a sister named Lena who lives in
    # Amsterdam" states no residence of the user's) are not the subject's.
    own, preds = _own_kinds(cand, subject), _own_kinds(fact, subject)
    a = cv | {f"@{p}" for p in own}
    b = mv | {f"@{p}" for p in preds}
    overlap = len(a & b) / len(a | b) if a | b else 0.0
    same_pred = bool((own & preds) - _WEAK)
    key = {v for v in shared if v in _KIND_BY_STEM or v in cand.anchors}
    topic = 3.0 * same_subject + 2.0 * same_pred + 2.0 * len(key) + 1.0 * len(shared) + 3.0 * overlap
    common = shared | {f"@{p}" for p in own & preds}
    mine, theirs = _polarity(cand, common), _polarity(fact, common)
    flip = "" if bool(mine) == bool(theirs) else ("strong" if "strong" in (mine, theirs) else "weak")
    cover, extra, hits = _cover(cand, subject, fact)
    back = _cover(fact, subject, cand)[0]
    return Relation(
        match=match,
        fact=fact,
        flip=flip,
        same_subject=same_subject,
        same_pred=same_pred,
        shared=shared,
        new=new,
        missing=missing,
        overlap=overlap,
        topic=topic,
        kinds=own & preds,
        subject=subject,
        cover=cover,
        extra=extra,
        hits=hits,
        back=back,
    )


def _cover(cand: Fact, subject: set[str], fact: Fact) -> tuple[float, float, int]:
    """How much of the candidate's content (its subject aside) ``fact`` states: the weighted share, the
    weight left unstated, and how many parts are stated."""
    weights = _weights(cand, cand.values - subject, _own_kinds(cand, subject))
    total = sum(weights.values())
    theirs = (fact.values - subject) | {f"@{p}" for p in _own_kinds(fact, subject)}
    covered = sum(w for t, w in weights.items() if t in theirs)
    return (covered / total if total else 0.0), total - covered, sum(1 for t in weights if t in theirs)


def _weights(cand: Fact, values: set[str], kinds: set[str]) -> dict[str, float]:
    """What each part of the candidate's content weighs when asking whether a card states it: a name or
    number says most about which fact it is, a known kind of value (a drink, a tool) next, then the
    other content words and the kinds of fact."""
    out = {v: 2.0 if v in cand.anchors else 1.5 if v in _KIND_BY_STEM else 1.0 for v in values - {_USER}}
    out.update({f"@{p}": 1.0 for p in kinds - _WEAK})
    return out


def _own_kinds(fact: Fact, subject: set[str]) -> set[str]:
    others = [kinds for name, kinds in fact.preds_of.items() if name not in subject]
    return fact.preds - set().union(*others) if others else fact.preds


def _polarity(fact: Fact, common: set[str]) -> str:
    """How strongly the clauses that carry the shared content are negated ('' if not): the shared
    values' clauses when values are shared ("pescatarian, not vegetarian": pescatarian is not
    negated), else the clauses of the shared kind of fact."""
    values = {t for t in common if not t.startswith("@")}
    wanted = values if any(tokens & values for tokens, _ in fact.clauses) else common
    levels = [level for tokens, level in fact.clauses if level and tokens & wanted]
    return "strong" if "strong" in levels else ("weak" if levels else "")


_GENERIC_KINDS = frozenset({"weekday", "time", "color", "family", "name"})


def _same_kind(rel: Relation, cand: Fact) -> bool:
    """Both state a value of one specific kind (a drink, an animal, a tool …)."""
    mine = {_kind(v, cand) for v in cand.values} - {None} - _GENERIC_KINDS
    theirs = {_kind(v, rel.fact) for v in rel.fact.values} - {None} - _GENERIC_KINDS
    return bool(mine & theirs)


def _kind(value: str, fact: Fact) -> str | None:
    if value in _KIND_BY_STEM:
        return _KIND_BY_STEM[value]
    if value in fact.anchors:
        return "name"
    return None


def _value_swap(rel: Relation, cand: Fact) -> str:
    """How clearly the differing values replace each other: 'strong', 'weak' or ''."""
    if not rel.new or not rel.missing:
        return ""
    kinds_new = {_kind(v, cand) for v in rel.new} - {None}
    kinds_old = {_kind(v, rel.fact) for v in rel.missing} - {None}
    if kinds_new & kinds_old:
        return "strong"
    if not rel.shared and rel.same_pred:
        return "strong"
    if (kinds_new or kinds_old) and rel.same_pred and not _key_shared(rel, cand):
        return "strong"
    return "weak"


def _clause_clash(rel: Relation, cand: Fact) -> str:
    """A value of the candidate's that the card names only outside the clauses stating the shared kind
    of fact, where the card names another value of that kind instead ("morning" vs "afternoon");
    '' when there is none."""
    shared = {f"@{p}" for p in cand.preds & rel.fact.preds}
    stating = set().union(*(tokens for tokens, _ in rel.fact.clauses if tokens & shared)) if shared else set()
    for value in cand.values & rel.shared:
        kind = _KIND_BY_STEM.get(value)
        if kind is None or kind == "family" or value in stating:
            continue
        others = sorted(v for v in stating if v != value and _KIND_BY_STEM.get(v) == kind and v not in cand.values)
        if others:  # named as written ("morning"), not by its stem
            word = next((t for t in sorted(stating, key=len, reverse=True) if stem(t) == others[0]), others[0])
            return f"it says {word} there"
    return ""


def _other_words(rel: Relation) -> bool:
    """Both sides keep words of their own once word forms ("works" / "work") are folded."""
    new = {stem(v) for v in rel.new} - {_USER}
    missing = {stem(v) for v in rel.missing} - {_USER}
    return bool(new - missing) and bool(missing - new)


def _replaces_within(rel: Relation, cand: Fact) -> bool:
    """The candidate names the stored value and a new one of the same kind ("switched from
    the saxophone to the guitar", "left Contoso and joined Hooli")."""
    kinds_new = {_kind(v, cand) for v in rel.new} - {None}
    kinds_old = {_kind(v, cand) for v in rel.shared} - {None}
    return bool(kinds_new & kinds_old)


def _key_shared(rel: Relation, cand: Fact) -> bool:
    """They share a distinctive value: a name, a number or a known kind of value."""
    return any((v in _KIND_BY_STEM and _KIND_BY_STEM[v] != "time") or v in cand.anchors for v in rel.shared)


def subject_names(title: str, summary: str, participants: Iterable[str] = ()) -> list[str]:
    """Who a statement is about, as written: its participants, else the names in its text."""
    named = [p.strip() for p in participants if isinstance(p, str) and p.strip()]
    if named:
        return named[:4]
    fact = read_fact(title, summary)
    words = _WORD.findall(fact.text)
    seen: list[str] = []
    for word in words:
        low = _bare(word)
        if low in fact.names and low not in [_bare(w) for w in seen]:
            seen.append(word.split("'")[0].split("’")[0])
    return seen[:4]


_EXPANSION = {"role": "works as profession career job", "work": "works job employer company employed"}


def about_user(title: str, summary: str) -> bool:
    """Whether a statement is about the user: "User works at …", "Works at …"."""
    return read_fact(title, summary).lead == _USER


def expanded_query(title: str, summary: str) -> str:
    """The statement plus the other words of its predicate classes ("puppy named Rex" also
    looks for "dog", "pet"), for the search restricted to the statement's subject."""
    fact = read_fact(title, summary)
    extra: list[str] = []
    for cls in sorted(fact.preds - _WEAK):
        extra += [w for w, c in _PREDICATES.items() if c == cls][:12]
        extra += _EXPANSION.get(cls, "").split()
    kinds = {_KIND_BY_STEM[v] for v in fact.values if v in _KIND_BY_STEM}
    for kind in sorted(kinds - {"weekday", "time", "color"}):
        extra += [w for w, k in _VALUE_KINDS.items() if k == kind][:12]
    return " ".join([fact.text, *dict.fromkeys(extra)])


def _noise(cand: Fact) -> tuple[str, float] | None:
    text = cand.text
    content = cand.values | cand.preds
    if _SMALL_TALK.search(text):
        return "small talk or a remark about the conversation itself, not a lasting fact", 0.9
    if _TRANSIENT.search(text) and _MOOD.search(text):
        return "a passing state (how someone felt at one moment), no lasting value", 0.88
    if not content:
        return "no content to remember", 0.85
    if _VAGUE.search(text) and len(cand.values) <= 2:
        return "too vague to be a lasting fact", 0.8
    return None


def _targets(best: Relation, relations: list[Relation]) -> list[int]:
    """The best match plus other matches stating the very same values about the same subject."""
    ids = [best.match["id"]]
    for rel in relations:
        if rel is best or not rel.same_subject or not rel.same_pred:
            continue
        if rel.fact.values - {rel.fact.lead} == best.fact.values - {best.fact.lead}:
            ids.append(rel.match["id"])
    return ids


def _later(cand: Fact, fact: Fact) -> bool | None:
    if cand.time is None or fact.time is None:
        return None
    if cand.time[0] > fact.time[1]:
        return True
    if cand.time[1] < fact.time[0]:
        return False
    return None


def _merged(candidate: dict[str, Any], match: dict[str, Any]) -> dict[str, Any]:
    temporal = dict(candidate.get("temporal") or {})
    people = list(dict.fromkeys(list(temporal.get("participants") or []) + list(match.get("participants") or [])))
    if people:
        temporal["participants"] = people[:24]
    tags = list(dict.fromkeys(list(candidate.get("tags") or []) + list(match.get("tags") or [])))[:12]
    return {**candidate, "temporal": temporal, "tags": tags}


def _answer(
    action: str, targets: list[int], reason: str, confidence: float, merged: dict[str, Any] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "action": action,
        "existing_event_ids": targets,
        "reason": reason,
        "confidence": round(confidence, 3),
    }
    if merged is not None:
        out["merged_candidate"] = merged
    return out


def _flagged(flip: bool, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return {**_answer(*args, **kwargs), "_flip": flip}


def decide_offline(context: dict[str, Any]) -> dict[str, Any]:
    """One decision for ``context['candidate']`` against ``context['matches']``."""
    candidate = context.get("candidate") or {}
    matches = [m for m in context.get("matches") or [] if isinstance(m, dict) and isinstance(m.get("id"), int)]
    temporal = candidate.get("temporal") or {}
    match_people: set[str] = set()
    for m in matches:
        for p in m.get("participants") or []:
            if isinstance(p, str):
                match_people.update(_bare(w) for w in _WORD.findall(p))
    user_info = context.get("user") if isinstance(context.get("user"), dict) else {}
    listed = user_info.get("names") if isinstance(user_info.get("names"), list) else []
    names = [n for n in listed if isinstance(n, str) and n.strip()]
    # Only one name can be "the user": in a namespace several people speak in, nobody is.
    user = frozenset(_bare(w) for w in _WORD.findall(names[0])) if len(names) == 1 else frozenset()
    cand = read_fact(
        candidate.get("title", ""),
        candidate.get("summary", ""),
        temporal,
        temporal.get("participants") or (),
        match_people,
        user,
    )
    result = _decide(cand, candidate, matches)
    if result["action"] != "ignore":
        repeat = _repeats(cand, context.get("earlier"), match_people, user)
        if repeat is not None:
            position, cover = repeat
            result = _answer(
                "ignore", [], f"restates item {position} of this import in other words", 0.86 if cover >= 0.8 else 0.75
            )
    own = candidate.get("confidence")
    if isinstance(own, (int, float)) and own < 0.5 and result["action"] in ("add", "merge", "supersede", "conflict"):
        # The exporting assistant itself was unsure: a person should look at it.
        result["confidence"] = min(result["confidence"], 0.6)
        result["reason"] += f" (the export marks it uncertain: confidence {own:g})"
    return result


def _repeats(cand: Fact, earlier: Any, known: set[str], user: frozenset[str]) -> tuple[int, float] | None:
    """The earlier item of the same import that states this candidate about the same subject, with
    how much of it it states; None when there is none."""
    best: tuple[int, float] | None = None
    changes = cand.stopped or cand.correction or bool(_CHANGE.search(cand.text))
    for item in earlier if isinstance(earlier, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("position"), int):
            continue
        other = read_fact(str(item.get("title") or ""), str(item.get("summary") or ""), None, (), known, user)
        if other.lead != cand.lead:
            continue
        cover, _, hits = _cover(cand, {cand.lead}, other)
        back, _, _ = _cover(other, {cand.lead}, cand)
        # Not a negation of it, nor a correction or change of it: those say something the first does not.
        if (
            hits >= 2
            and min(cover, back) >= 0.6
            and cand.negated == other.negated
            and not changes
            and (best is None or cover > best[1])
        ):
            best = (item["position"], cover)
    return best


def _decide(cand: Fact, candidate: dict[str, Any], matches: list[dict[str, Any]]) -> dict[str, Any]:
    result = _decide_one(cand, candidate, matches)
    if result.get("_flip") and result["action"] in ("ignore", "merge"):
        # One side negates the other: never sure enough to drop or fold it silently.
        result["confidence"] = min(result["confidence"], 0.7)
        result["reason"] += "; one of them is negated"
    result.pop("_flip", None)
    if result["action"] == "supersede":
        held = [m["id"] for m in matches if m["id"] in result["existing_event_ids"] and _says_more(cand, m)]
        if held:
            # Superseding hides the whole card, and with it what else it says ("lives in Utrecht with
            # Tomás and Ivy, who's six" against "Ivy is seven now"): a person should choose.
            result["confidence"] = min(result["confidence"], 0.7)
            result["reason"] += f"; event {held[0]} also says other things"
    return result


def _says_more(cand: Fact, match: dict[str, Any]) -> bool:
    """The stored card holds values besides the ones the candidate replaces."""
    view = card_view(match, cand, cand.people)
    # Superseding hides the whole card, not only the subject's part of it.
    rel = relate(cand, match, view.whole or view.fact)
    return len(rel.missing) - len(rel.new) >= 2


def _decide_one(cand: Fact, candidate: dict[str, Any], matches: list[dict[str, Any]]) -> dict[str, Any]:
    noise = _noise(cand)
    if noise:
        return _answer("ignore", [], noise[0], noise[1])
    if not matches:
        return _answer("add", [], "no stored event is similar", 0.95)
    relations = []
    ended: dict[int, set[str]] = {}
    for rank, m in enumerate(matches):
        view = card_view(m, cand, cand.people)
        ended[m["id"]] = view.ended
        rel = relate(cand, m, view.fact)
        if view.whole is not None and rel.same_subject:
            # The subject's part may leave out what the card says of them in another part ("Maya lives
            # with Tomás and their six-year-old daughter Ivy"): what the card states counts in full.
            whole = _cover(cand, rel.subject, view.whole)
            if whole[0] > rel.cover:
                rel.cover, rel.extra, rel.hits = whole
        rel.rank = rank
        whole_fact = view.whole or view.fact
        rel.said = whole_fact.values | {f"@{p}" for p in whole_fact.preds}
        relations.append(rel)
    slots = _decide_slots(cand, candidate, relations, ended)
    return _explained(_review(slots, cand, candidate, relations), cand, relations)


def _explained(result: dict[str, Any], cand: Fact, relations: list[Relation]) -> dict[str, Any]:
    """The reason names the subject, the kind of fact (slot) and the values matched against the target,
    as the candidate writes them."""
    targets = result.get("existing_event_ids") or []
    rel = next((r for r in relations if targets and r.match["id"] == targets[0]), None)
    if rel is None:
        return result
    written: dict[str, str] = {}
    for word in _WORD.findall(cand.text):
        low = _NUMBER_WORDS.get(_bare(word), _bare(word))
        written.setdefault(stem(low), word)
        written.setdefault(low, word)

    def shown(values: set[str]) -> str:
        return ", ".join(sorted({written.get(v, v) for v in values if not v.startswith("@")})[:5]) or "none"

    slot = ", ".join(sorted(rel.kinds - _WEAK)) or "none named"
    detail = f"subject {_who(rel)}; slot {slot}; matched {shown(rel.shared)}"
    if rel.new and result["action"] in ("supersede", "conflict"):
        detail += f"; new {shown(rel.new)}"
    return {**result, "reason": f"{result['reason']} [{detail}]"}


def _decide_slots(
    cand: Fact, candidate: dict[str, Any], relations: list[Relation], ended: dict[int, set[str]]
) -> dict[str, Any]:
    """The decision from the subject, kind of fact and values of the closest card."""
    on_topic = [
        r
        for r in relations
        if r.same_subject
        and (
            r.same_pred
            or _key_shared(r, cand)
            or _same_kind(r, cand)
            or (r.shared and not (cand.preds and r.fact.preds))
        )
    ]
    if not on_topic:
        near = max(relations, key=lambda r: r.topic)
        if near.same_subject and near.shared:
            return _answer("add", [], f"about the same subject as event {near.match['id']} but another fact", 0.8)
        return _answer("add", [], "no stored event states this fact", 0.92)
    best = max(on_topic, key=lambda r: (r.topic, -r.match["id"]))
    same_kind = [r for r in on_topic if r.same_pred]
    if cand.preds - _WEAK and not best.same_pred and same_kind and not any(v in _KIND_BY_STEM for v in best.shared):
        # A statement of a kind of fact ("moved to Amsterdam") is compared with one of that kind
        # ("lives in Utrecht") before one that only shares a name with it ("flies from Amsterdam").
        best = max(same_kind, key=lambda r: (r.topic, -r.match["id"]))
    eid = best.match["id"]
    targets = _targets(best, on_topic)
    swap = _value_swap(best, cand)
    fact = best.fact
    flip = bool(best.flip)
    functional = bool(best.kinds & _FUNCTIONAL)

    if (cand.update or cand.stopped or cand.correction) and not flip and _replaces_within(best, cand):
        return _flagged(flip, "supersede", targets, f"replaces the value of event {eid} with a new one", 0.88)

    if cand.stopped and not fact.stopped and not swap and not best.new and (best.shared or best.same_pred):
        return _flagged(flip, "supersede", targets, f"says event {eid} is no longer true", 0.9)

    # A value a card of the subject says has ended ("no longer uses Notion", "not vegetarian anymore"),
    # said again: outdated, or news a person should confirm.
    ending = next(
        (
            r
            for r in sorted(on_topic, key=lambda r: -r.match["id"])
            if ended.get(r.match["id"], set()) & (cand.values - {cand.lead})
        ),
        None,
    )
    if ending is not None and not (cand.stopped or cand.past or cand.negated):
        end_id = ending.match["id"]
        if cand.update or cand.correction:
            return _flagged(flip, "supersede", [end_id], f"says again what event {end_id} says has ended", 0.7)
        return _flagged(flip, "conflict", [end_id], f"event {end_id} says this has ended", 0.72)

    if cand.past and not cand.correction and (swap or flip):
        return _flagged(flip, "add", [], f"a past state that event {eid} has since replaced; kept as history", 0.75)

    if flip and (best.shared or best.same_pred):
        if cand.stopped or (cand.update and cand.negated):
            return _flagged(flip, "supersede", targets, f"says event {eid} is no longer true", 0.9)
        if cand.correction:
            return _flagged(flip, "supersede", targets, f"corrects event {eid}", 0.88)
        clauses = [c for c in _CLAUSE.split(cand.text) if _WORD.search(c)]
        shared_preds = {f"@{p}" for p in best.kinds}
        # Confident only when the negation covers the relation itself ("is not allergic"),
        # not another verb of the sentence ("cannot be around pollen because of an allergy").
        covers = not shared_preds or any(level and tokens & shared_preds for tokens, level in cand.clauses)
        clean = len(best.new) + len(best.missing) <= 2 and len(clauses) == 1 and best.flip == "strong" and covers
        return _flagged(flip, "conflict", targets, f"negates event {eid}; both cannot be true", 0.88 if clean else 0.72)

    if swap:
        strong = swap == "strong"
        if cand.correction:
            return _flagged(flip, "supersede", targets, f"corrects the value of event {eid}", 0.9 if strong else 0.72)
        if cand.update or cand.stopped:
            if strong and best.same_pred:
                return _flagged(flip, "supersede", targets, f"a newer value for what event {eid} states", 0.9)
            return _flagged(flip, "supersede", targets, f"may update event {eid}", 0.7)
        if (
            not strong
            and functional
            and best.same_pred
            and best.same_subject
            and _other_words(best)
            and not _key_shared(best, cand)
        ):
            # One value at a time (where someone lives, what they prefer): other words are another value.
            return _flagged(flip, "conflict", targets, f"may state another value than event {eid}", 0.7)
        if not strong:
            # Different words on both sides while the key values agree.
            if len(best.new) > len(best.missing):
                return _flagged(
                    flip,
                    "merge",
                    targets,
                    f"probably the fact of event {eid} with other details",
                    0.7,
                    _merged(candidate, best.match),
                )
            return _flagged(flip, "ignore", targets, f"probably restates event {eid} in other words", 0.7)
        if best.kinds & _IMMUTABLE:
            return _flagged(
                flip, "conflict", targets, f"another value for a fact that does not change (event {eid})", 0.86
            )
        later = _later(cand, fact)
        if not functional:
            if later and (candidate.get("temporal") or {}).get("happened_start"):
                return _flagged(flip, "supersede", targets, f"another value, dated after event {eid}", 0.66)
            return _flagged(flip, "add", [], f"another value besides the one in event {eid}", 0.7)
        if later:
            return _flagged(flip, "supersede", targets, f"a different value, dated after event {eid}", 0.74)
        return _flagged(flip, "conflict", targets, f"states a different value than event {eid}", 0.72)

    if functional and best.same_pred and (clash := _clause_clash(best, cand)):
        # "Prefers meetings in the afternoon" against "would rather have meetings in the morning.
        # Afternoons are for deep work": the card names afternoons, but not where it states the preference.
        return _flagged(flip, "conflict", targets, f"may state another value than event {eid} ({clash})", 0.7)

    if best.new:
        detail = [v for v in best.new if v in cand.anchors or v in _KIND_BY_STEM] + sorted(
            cand.preds - fact.preds - _WEAK - _SOFT
        )
        if len(best.new) == 1 and not detail:
            return _flagged(flip, "ignore", targets, f"restates event {eid} (one extra word)", 0.72)
        confidence = 0.88 if (len(best.new) >= 3 or detail) and best.same_pred else 0.76
        return _flagged(
            flip,
            "merge",
            targets,
            f"the same fact as event {eid} with more detail",
            confidence,
            _merged(candidate, best.match),
        )
    if best.missing:
        confidence = 0.88 if best.same_pred else 0.78
        return _flagged(flip, "ignore", targets, f"already covered by event {eid}, which says more", confidence)
    confidence = 0.93 if best.same_pred or best.shared else 0.8
    return _flagged(flip, "ignore", targets, f"the same fact as event {eid} in other words", confidence)


_INSTRUCTION = re.compile(
    r"^\W*(?:please\s+)?(?:always|never|don['’]?t|do not|avoid|use|write|answer|reply|respond|keep|call|address|"
    r"sign|remind|include|format|send|put|give|make sure|start|end|add|mention|list|summari[sz]e|draft|"
    r"when\b[^,]*,\s*(?:always\s+|never\s+|please\s+)?[a-z]+)\b",
    re.IGNORECASE,
)


def _is_instruction(cand: Fact, candidate: dict[str, Any]) -> bool:
    """A request to the assistant ("Always answer in bullet points", "When drafting posts, keep …"):
    about how to help, not a fact about anyone."""
    kind = candidate.get("memory_kind") or candidate.get("memoryKind")
    return kind == "instruction" or bool(_INSTRUCTION.match(cand.text))


def _restatement(rel: Relation, cand: Fact, candidate: dict[str, Any], note: str = "") -> dict[str, Any]:
    eid = rel.match["id"]
    if rel.extra >= 2.0:
        confidence = _restating_confidence(rel, cand)
        if rel.cover < 0.8 and not _contains_short_card(rel, cand):
            # A merge hides the card it merges into: only when the card states nearly all of the
            # candidate, or is a short card the candidate states whole, is that safe without a person.
            confidence = min(confidence, 0.8)
        return _answer(
            "merge",
            [eid],
            f"event {eid} states the same about {_who(rel)}; this adds detail{note}",
            confidence,
            _merged(candidate, rel.match),
        )
    confidence = _restating_confidence(rel, cand)
    if rel.extra >= 1.0 and rel.cover < 0.8:
        confidence = min(confidence, 0.8)  # a word of detail the card lacks ("which is severe"): a person sees it
    return _answer("ignore", [eid], f"event {eid} already states this about {_who(rel)}{note}", confidence)


def _who(rel: Relation) -> str:
    name = next(iter(rel.subject), "")
    return "the user" if name in ("", _USER) else name.title()


# "Only", "never", "no other": a statement that excludes other values may contradict a card that
# shares its words ("has one child, his son Kyle" against a card about Kyle alone).
_EXCLUSIVE = re.compile(r"\b(only|never|no other|none|sole|single|ever)\b", re.IGNORECASE)


def _contains_short_card(rel: Relation, cand: Fact) -> bool:
    """A short card the candidate states whole, with detail: the same fact in more words. Not with a
    name or number of its own ("adopted a new dog named Mochi"), which may be a new value, nor a longer
    card ("reading The Name of the Wind by Patrick Rothfuss" against "recommends …")."""
    return (
        not rel.missing
        and _key_shared(rel, cand)
        and rel.hits >= 2
        and not rel.new & cand.anchors
        and len(rel.fact.values - rel.subject) <= 3
    )


def _restating_confidence(rel: Relation, cand: Fact) -> float:
    if rel.flip:
        return 0.6
    if _EXCLUSIVE.search(cand.text) or _EXCLUSIVE.search(cand.title):
        return 0.75
    if cand.stopped or cand.correction or _CHANGE.search(cand.text):
        return 0.8  # it says something changed; that the card already says so is for a person to see
    kinds_new = {_kind(v, cand) for v in rel.new} - {None, "name"}
    if kinds_new & ({_kind(v, rel.fact) for v in rel.missing} - {None}):
        return 0.7  # a number or drink of its own where the card has another ("five" against "six")
    if rel.cover >= 0.8:
        return 0.9
    if _contains_short_card(rel, cand):
        return 0.88
    return 0.86 if rel.cover >= 0.65 else 0.8 if rel.cover >= 0.6 else 0.7


# Words that say a value changed. Narrower than _UPDATE: "started", "joined", "since" or "new" open
# as many restatements of a stored fact ("joined a writers group") as updates of one.
_CHANGE = re.compile(
    r"\b(now|no longer|not any ?more|any ?more|these days|nowadays|moved|relocated|relocating|switched|switching|"
    r"changed|has since|have since|as of|replaced|instead|from now on|going forward|quit|stopped|no more|"
    r"transferred|promoted|upgraded|postponed|delayed|pushed (?:back|out)|rescheduled|brought forward|renamed|"
    r"gave up|given up|(?:a|her|his|their|my|our) new)\b",
    re.IGNORECASE,
)


def _restating(rel: Relation | None, cand: Fact, changes: bool) -> bool:
    """The card states most of the candidate (two or more of its parts), so the candidate says nothing
    new about the subject; a candidate saying something changed needs the card to state nearly all of it."""
    if rel is None:
        return False
    if (
        not changes
        and not rel.flip
        and _key_shared(rel, cand)
        and not _kinds_swap(rel, cand)
        and ((_kind_slot(rel) and len(rel.missing) <= 3) or (rel.kinds - _WEAK and rel.hits >= 2))
    ):
        # One subject, one slot, one value, in other words around it ("plays the saxophone in a local
        # band"; "likes to start the day with tea" and the short card "drinks tea every morning"). A long
        # card naming the value in passing ("yoga is so cool …") is no statement of that slot.
        return True
    # A name both share beside the candidate's own subject ("Has a beagle named Biscuit") is a part too.
    if rel.hits + (1 if rel.subject and cand.lead not in rel.subject else 0) < 2:
        return False
    if not changes and rel.back >= 0.8 and rel.hits >= 2 and _key_shared(rel, cand):
        return True  # all the card says, and more: the same fact in more detail
    return rel.cover >= (0.75 if changes else 0.5)


def _states_slot_value(rel: Relation, cand: Fact) -> bool:
    """The card gives a value for the kind of fact both state: a value of the same kind, a shared name or
    number, or a card short enough to be about that one fact."""
    kinds_new = {_kind(v, cand) for v in rel.new} - {None}
    kinds_old = {_kind(v, rel.fact) for v in rel.missing} - {None}
    names = set() if rel.kinds & _FUNCTIONAL else {"name"}  # a place or employer is the value of a home or job
    return bool(kinds_new & kinds_old - names) or _key_shared(rel, cand) or len(rel.missing) <= 3


_FROM_TO = re.compile(
    r"\bfrom\s+(?:the\s+|an?\s+|her\s+|his\s+|their\s+|my\s+)?([\w'’-]+)\s+"
    r"(?:to|for)\s+(?:the\s+|an?\s+)?([\w'’-]+)",
    re.IGNORECASE,
)


def _number_clash(rel: Relation | None, cand: Fact) -> tuple[str, str] | None:
    """A number of the candidate's and another of the card's for one kind of fact both state (an age, a
    date, a count), with no number shared: (new, old), or None."""
    if rel is None or not rel.kinds - _WEAK:
        return None
    new = sorted(v for v in rel.new if v.isdigit())
    old = sorted(v for v in rel.missing if v.isdigit())
    if new and old and not any(v.isdigit() for v in rel.shared):
        return new[0], old[0]
    return None


def _moved_from(cand: Fact, same: list[Relation]) -> Relation | None:
    """The card led by the subject that states the old value of "from X to Y" ("moved her notes from
    Obsidian to Logseq", "changed from Galway to Dublin") and not the new one."""
    for m in _FROM_TO.finditer(cand.text):
        old, new = (_NUMBER_WORDS.get(_bare(w), _bare(w)) for w in m.groups())
        keys = {old, stem(old)}
        news = {new, stem(new)}
        held = [r for r in same if r.fact.lead in r.subject and keys & r.said and not news & r.said]
        if held:
            return min(held, key=lambda r: r.rank)
    return None


def _ends(cand: Fact, best: Relation | None) -> Relation | None:
    """The subject's card whose fact the candidate says has stopped ("no longer makes gaming videos for
    YouTube" against "creating gaming content for YouTube"), when it states most of it."""
    if best is None or not cand.stopped or cand.past or best.fact.stopped or best.cover < 0.5 or best.hits < 2:
        return None
    return best if best.fact.lead in best.subject else None


def _folded(best: Relation) -> dict[str, Any]:
    """Several turns folded into one statement ("favourite character is Aragorn; keeps a painting of
    him"): the subject's cards state it between them. Nothing to add, but no single card to be sure of."""
    eid = best.match["id"]
    return _answer(
        "ignore", [eid], f"event {eid} and other cards about {_who(best)} already state this between them", 0.7
    )


# Kinds of fact whose value only means something with its object: what someone prefers or likes.
_OBJECT_SLOTS = frozenset({"prefer", "like", "dislike"})


def _kind_slot(rel: Relation) -> set[str]:
    """Kinds of value (a drink, a tool, an instrument) both give: the slot, when their verbs differ
    ("drinks espresso" and "prefers green tea in the morning", "keeps notes in Todoist" and "organises
    work in Todoist")."""
    mine = {_KIND_BY_STEM[v] for v in rel.shared | rel.new if v in _KIND_BY_STEM}
    theirs = {_KIND_BY_STEM[v] for v in rel.shared | rel.missing if v in _KIND_BY_STEM}
    return (mine & theirs) - _GENERIC_KINDS


def _kinds_swap(rel: Relation, cand: Fact) -> bool:
    """A value of the candidate's and one of the card's are of one kind (a place, employer or name for
    a one-value fact such as a home or job)."""
    kinds_new = {_kind(v, cand) for v in rel.new} - {None}
    kinds_old = {_kind(v, rel.fact) for v in rel.missing} - {None}
    names = set() if rel.kinds & _FUNCTIONAL else {"name"}
    return bool(kinds_new & kinds_old - names)


def _union_cover(cand: Fact, best: Relation, same: list[Relation]) -> float:
    """How much of the candidate the subject's matching cards state between them."""
    said: set[str] = set()
    for rel in same:
        said |= rel.said - rel.subject
    weights = _weights(cand, cand.values - best.subject, _own_kinds(cand, best.subject))
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in said) / total if total else 0.0


def _review(result: dict[str, Any], cand: Fact, candidate: dict[str, Any], relations: list[Relation]) -> dict[str, Any]:
    """Check the slot decision against how much of the candidate a card of its subject already states,
    and give the confidence the evidence supports."""
    action, reason = result["action"], result["reason"]
    by_id = {r.match["id"]: r for r in relations}
    targets = result["existing_event_ids"]
    target = by_id.get(targets[0]) if targets else None
    same = [r for r in relations if r.same_subject]
    best = max(same, key=lambda r: (round(r.cover, 2), -r.rank), default=None)
    changes = bool(cand.stopped or cand.correction or _CHANGE.search(cand.text))
    restating = _restating(best, cand, changes)
    folded = (
        not restating
        and not changes
        and best is not None
        and best.cover >= 0.35
        and _union_cover(cand, best, same) >= 0.8
    )
    if _is_instruction(cand, candidate) and not (best is not None and best.cover >= 0.6):
        return _answer("add", [], "an instruction to the assistant that no stored event gives", 0.9)
    clash = _number_clash(best, cand) if restating else None
    if clash is not None:
        # The same fact with another number ("Ivy is five" against "Ivy, who's six"): both cannot be true.
        eid = best.match["id"]
        dated = bool(_later(cand, best.fact))
        if changes or dated:
            return _answer("supersede", [eid], f"gives {clash[0]} where event {eid} gives {clash[1]}, as newer", 0.7)
        return _answer("conflict", [eid], f"gives {clash[0]} where event {eid} gives {clash[1]}", 0.7)
    moved = _moved_from(cand, same) if changes else None
    if moved is not None and not (action == "supersede" and target is moved):
        eid = moved.match["id"]
        return _answer(
            "supersede",
            [eid],
            f"names what event {eid} states of {_who(moved)} as the old value and gives a new one",
            0.8,
        )
    ending = _ends(cand, best)
    # A card led by someone else only names the subject ("Joanna loves how video games …" is no card of
    # Nate's): the card led by the subject that states what ended is the one to supersede.
    if ending is not None and (action != "supersede" or target is None or target.fact.lead not in target.subject):
        eid = ending.match["id"]
        return _answer("supersede", [eid], f"says that what event {eid} states of {_who(ending)} has ended", 0.8)
    if action in ("supersede", "conflict") and target is not None:
        # What the card says has ended, or a value other than the one where the card states the slot:
        # both read clause by clause already.
        ended = "has ended" in reason or "(it says" in reason
        negation = any(w in reason for w in ("negates", "no longer true", "corrects"))
        slot = target.same_subject and bool(
            target.kinds - _WEAK - _SOFT
            or target.kinds & _FUNCTIONAL
            or _kind_slot(target)
            or _key_shared(target, cand)
            or (changes and target.shared)
        )
        if not ended and not negation:
            # A change or contradiction is of the candidate's own subject ("Maya's sister Clare lives in
            # Lisbon" says nothing of a card led by Lisbon), and of one object of a preference ("favourite
            # bakery" is not "prefers an aisle seat").
            slot = (
                slot
                and _states_slot_value(target, cand)
                and cand.lead in target.subject
                and (not target.kinds & _OBJECT_SLOTS or bool(target.shared - target.subject))
            )
        if not slot:
            if restating:
                return _restatement(best, cand, candidate)
            return _answer("add", [], "no stored event gives this kind of fact about its subject", 0.7)
        if ended:
            return result
        if negation:
            plain = cand.negated and len([c for c in _CLAUSE.split(cand.text) if _WORD.search(c)]) == 1
            if result["confidence"] < 0.85 and best is not None and best.cover >= 0.5 and not plain:
                # A negation outside the shared fact ("can't have dairy" against "lactose intolerant"):
                # most likely the same fact, but a person should see it.
                return {**_restatement(best, cand, candidate, "; one of them is negated"), "confidence": 0.6}
            return result
        dated = bool(_later(cand, target.fact))
        if len(target.missing) <= 3 and _value_swap(target, cand):
            # A short card about one fact with other words in its place ("aisle" for "window"): another
            # value, not a rewording; only a long conversational card differs in words by the way.
            restating = False
        if restating and best.cover >= 0.75 and not _replaces_within(best, cand):
            return {**_restatement(best, cand, candidate), "confidence": 0.75}
        keyed = any(v in cand.anchors or v in _KIND_BY_STEM for v in target.new) or target.kinds & _OBJECT_SLOTS
        if (
            action == "conflict"
            and not (changes or dated)
            and not _kinds_swap(target, cand)
            and (len(target.missing) > 3 or not keyed)
        ):
            # No change word, no date, no value of one kind replacing another (a place for a place, a drink
            # for a drink), and a long card or no name, number or known kind of value of the candidate's
            # own ("makes a living from competitive gaming"): other words, not another value. A preference
            # keeps its object ("aisle" and "window" seat) instead.
            if _restating(best, cand, changes):
                return _restatement(best, cand, candidate)
            if folded:
                return _folded(best)
            return _answer("add", [], "no stored event gives another value of this about its subject", 0.7)
        if action == "supersede" and not (changes or dated):
            if restating:
                return _restatement(best, cand, candidate)
            if _value_swap(target, cand) == "strong":
                return _answer(
                    "conflict",
                    targets,
                    f"states another value than event {target.match['id']} with nothing saying which is newer",
                    0.7,
                )
            return _answer("add", [], "no stored event gives this value about its subject", 0.7)
        return result
    if action == "add":
        if restating:
            return _restatement(best, cand, candidate)
        if folded:
            return _folded(best)
        # Any card stating much of it, whoever it seems to be about, leaves a doubt a person should clear.
        top = max((r.cover for r in relations), default=0.0)
        return {**result, "confidence": 0.9 if top < 0.25 else 0.8 if top < 0.4 else 0.7}
    if action in ("merge", "ignore") and target is not None:
        if folded:
            return _folded(best)
        if not restating:
            return _answer("add", [], "no stored event about its subject states this", 0.7)
        if best.cover > target.cover + 0.1:
            return _restatement(best, cand, candidate)
        return _restatement(target, cand, candidate)
    return result
