"""Rule-based event extraction for the offline provider.

One event per informative statement (a message's informative sentences form one card;
a message that dates two things separately gives two). Each card cites the message it
came from — plus the question it answers when the answer alone would not make sense —
names its participants, guesses its type and criticality from cue words, and resolves
its time against the message's own timestamp. Corrections of an earlier event by the
same person are linked as supersessions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from collections import Counter
from datetime import date, datetime, timedelta
from typing import Any, Iterable, Sequence

from core import lexicon
from core.providers.base import UNNAMED_USER
from core.search.window import CONDITIONAL
from core.vocab import EVENT_TYPES
from core.text import (
    CaselessPattern,
    ABBREVIATIONS,
    ENDS_IN_TITLE,
    NUMBER_WORDS,
    STOPWORDS,
    TITLE_REACH,
    clip,
    normalize,
    prose,
    search_at_end,
    sentences,
    without_time_zones,
    words,
)
from core.timeparse import MONTH_WORDS, WEEKDAY_WORDS, find_time_mentions
from core.timeutil import parse_timestamp

_GREETING = re.compile(
    r"^(hey|hi|hello|hiya|yo|bye|goodbye|see you|see ya|take care|good (morning|night|evening|afternoon)|"
    r"thanks|thank you|thx|wow|whoa|awesome|cool|nice|great|congrats|congratulations|omg|haha|lol|"
    r"that'?s (so |really )?(great|awesome|amazing|cool|nice|wonderful|fantastic|sweet|lovely|good)|"
    r"sounds (great|good|fun|amazing|awesome|like)|good to (see|hear)|glad to hear|how are you|"
    r"how have you been|how'?s it going|long time no|good luck|best of luck|have fun|"
    r"happy (birthday|anniversary|new year|holidays|easter)|merry christmas|"
    r"i'?ll (keep (that|it|this) in mind|remember (that|it|this))|will do)\b",
    re.IGNORECASE,
)
_FILLER = lexicon.words("fillers_events")
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|mine|we|we're|we've|our|us)\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(you|your|you're|you've|yours)\b", re.IGNORECASE)
# "He is allergic to peanuts", "She starts at Google in May": a statement about someone just named.
_THIRD_PERSON_SUBJECT = re.compile(
    r"^(?:(?:yeah|yes|well|and|so|oh|also|now|actually)[,!]?\s+)?(?P<pronoun>he|she)"
    r"(?:['’]s)?\s+\w",
    re.IGNORECASE,
)
# "my sister Ana", "our new colleague Lina": someone a later "she" or "he" of the same speaker can mean.
# Kin words that say a person's gender (also what a "she" or "he" in the graph rules can mean).
FEMININE_KIN = (
    "sister mother mom mum wife girlfriend fiancée daughter stepdaughter granddaughter aunt niece grandma grandmother"
).split()
MASCULINE_KIN = "brother father dad husband boyfriend son stepson grandson uncle nephew grandpa grandfather".split()
_KIN_GENDER = {
    **dict.fromkeys(FEMININE_KIN, "f"),
    **dict.fromkeys(MASCULINE_KIN, "m"),
    **dict.fromkeys(
        "partner friend colleague coworker boss manager cousin neighbour neighbor teacher "
        "doctor kid child baby".split(),
        None,
    ),
}
_KIN_NAMED = re.compile(
    rf"\b(?:[Mm]y|[Oo]ur)\s+(?:(?:new|best|old|little|big|older|younger|eldest|youngest)\s+)?"
    rf"(?P<kin>{'|'.join(_KIN_GENDER)})\s+(?P<name>[A-Z][a-z]+)\b"
)
_NUMBER = re.compile(r"\d")
# A weekday of the week said in, the day alone or with its time ("on Friday", "for Thursday at 17:30").
_WEEKDAY_REF = re.compile(
    r"^(on|this|for|by) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"(?: at [\d:.apm ]+)?$",
    re.IGNORECASE,
)
_JUST = re.compile(r"\b(just|this morning|earlier today)\b", re.IGNORECASE)

_TYPE_RULES: tuple[tuple[str, CaselessPattern], ...] = tuple(
    (kind, CaselessPattern(pattern))
    for kind, pattern in (
        (
            "cancellation",
            r"\b(cancel(l?ed|s|ling)?|called off|call(ed)? it off|scrapped|no longer (going|happening))\b|取消",
        ),
        # Before migration and change: "we decided to stay on Airflow instead of migrating" is a
        # decision, and no migration.
        (
            "decision",
            r"\b(decid(ed|e|ing)|decision(s)? (recorded|made)|decision:|chose|choose|going with|settled on|"
            r"opted|made up my mind|picked(?! up)|we agreed|agreed (on|that|to))\b|决定",
        ),
        ("migration", r"\b(migrat\w*|moved (from|over) \w+ to|port(ed|ing) (it )?to)\b|迁移"),
        # "change" as a verb or announcing one ("change of plan", "another change:"); "the merge
        # change landed" or "show me the change" names a thing, no change of state.
        (
            "change",
            r"\b(switch(ed|ing)? to|chang(ed|es|ing)\b|change (of|to|from|in)\b|"
            r"(another|small|one|a) (\w+ )?change(?=:)|"
            r"no longer|not anymore|instead of|moved (the|it|our|my)\b|swap(s|ped|ping)?\b|"
            r"resched\w*|postpon\w*|actually|now (use|prefer|live|work))\b|变更|改成|改为|改用|换成|换用|不再",
        ),
        (
            "plan",
            r"\b(plan(ning|s|ned)?|will|going to|gonna|intend|hope to|want to|about to|next (week|month|year)|"
            r"tomorrow|upcoming|schedul\w*|thinking (of|about)|(flying|heading) to)\b|计划|打算",
        ),
        ("release", r"\b(releas(ed|ing)|launch(ed|ing)|publish(ed|ing)|shipped|went live)\b|发布"),
        (
            "task_completed",
            r"\b(finish(ed)?|complet(ed|e)|done with|graduat(ed|ing)|got (my|the|a) \w+|"
            r"won|achiev(ed)|passed|merged|fixed|built|made|created|painted|wrote|ran (a|the|my))\b|完成",
        ),
        # "meeting notes" and "picked up the passport" name no meeting and no decision.
        (
            "meeting",
            r"\b(met|meet|meeting(?! (?:notes|minutes|room|rooms|agenda|invites?)\b)|call with|catch(ing)? up|"
            r"visit(ed|ing)?|party|conference|session with|went to|hang(ing)? out|dinner with|lunch with)\b"
            r"|会议|见面",
        ),
        (
            "collaboration",
            r"\b(together|collaborat\w*|teamed up|team up|partner(ed)? with|helped|join(ed)? (forces|me))\b|协作|合作",
        ),
        (
            "incident",
            r"\b(accident|broke|broken|crash(ed)?|injur\w*|sick|ill|hospital|lost|stolen|fail(ed|ure|ing|s)?|"
            r"outage|bug|error|emergency|hurt)\b|故障|事故",
        ),
    )
)
# One pass instead of one search per rule: informative() only asks whether any rule fires.
_ANY_TYPE = CaselessPattern("|".join(f"(?:{rx.pattern})" for _, rx in _TYPE_RULES))
_PREFERENCE = CaselessPattern(
    r"\b(love|loves|loved|like|likes|prefer|prefers|favou?rite|hate|hates|enjoy|enjoys|fan of|into|can't stand|"
    r"passionate about)\b|喜欢|讨厌|偏好"
)
_IDENTITY = CaselessPattern(
    r"\b(i am|i'm|my name|call me|i work as|work as|my job|born|years old|my (wife|husband|partner|son|daughter|"
    r"mom|mum|dad|mother|father|sister|brother|kids|children)|i live in|identify as|my pronouns|transgender|"
    r"married|single|divorced)\b|我是|我叫"
)
# What names a medicine: a dose, a common one, or a drug-class ending ("lisinopril", "atorvastatin").
DOSE = r"\d+(?:[.,]\d+)?\s*(?:mg|mcg|µg)\b"
MEDICINE = (
    rf"(?:{'|'.join(lexicon.ordered('medicines'))}|"
    rf"[a-z]{{3,}}(?:{'|'.join(lexicon.ordered('medicine_endings'))}))"
)
_SAFETY = CaselessPattern(
    rf"\b(allerg\w*|epipen|medication|medicine|prescri\w*|{MEDICINE}|diabet\w*|asthma|"
    rf"seizure|emergency contact|never give|do not give)\b|{DOSE}|过敏",
    needles=(
        "allerg",
        "epipen",
        "medic",
        "prescri",
        "diabet",
        "asthma",
        "seizure",
        "emergency",
        "give",
        "mg",
        "mcg",
        *re.findall(r"[a-z]{3,}", MEDICINE),
    ),
)  # every word and drug-class ending MEDICINE spells out
_PLANNED = re.compile(
    r"\b(will|going to|gonna|plan(ning)? to|intend|hope to|want to|about to|scheduled|next|tomorrow|upcoming|soon|"
    r"needs? to)\b|\w['’]ll\b",
    re.IGNORECASE,
)
# A clause in the present ("Dr. Visser is ill on Thursday") has a tense of its own: it is not read in
# the tense of another clause of its sentence ("The clinic called, …").
_PRESENT_AUX = re.compile(r"\b(?:is|are|am|has|have|does|do|can)\b|['’](?:re|m)\b", re.IGNORECASE)
# "I'm flying out on Monday", "I start there on Monday", "Mum arrives on Friday": the present
# progressive, or a verb of timetables in the present, with a day is an arrangement to come.
_ARRANGED = re.compile(
    r"\b(?:(?:am|is|are|i'm|we're|you're|he's|she's|they're)\s+\w+ing|"
    r"(?:starts?|begins?|leaves?|fly|flies|arrives?|returns?|lands?|opens?|launch(?:es)?))\b",
    re.IGNORECASE,
)
_ONGOING = re.compile(
    r"\b(currently|these days|nowadays|still|right now|at the moment|been \w+ing|am \w+ing|i'm \w+ing)\b", re.IGNORECASE
)
_PAST = re.compile(
    # Not every word ending in "ed" is a past: "you need to leave", "a hundred", "indeed".
    r"\b(?!(?:need|feed|seed|speed|proceed|succeed|exceed|indeed|breed|bleed|weed|bed|red|shed|wed|embed|hundred|"
    r"sacred|naked|wicked|kindred)\b)(\w+ed|went|got|had|was|were|did|made|took|saw|met|bought|wrote|ran|won|began|found|gave|came|left|"
    r"became|felt|told|heard|built|sold|paid|brought|thought|caught|taught|drove|flew|ate|drank|spent|lost)\b",
    re.IGNORECASE,
)
# Only explicit correction language may supersede an earlier event; "moved" or "changed"
# alone are too common in ordinary stories.
_CHANGE_CUE = CaselessPattern(
    # "not … anymore", never a bare "any more tips?"; "it turns out that …", never "see how it turns out".
    r"(?:\bnot\b|n't|\bnever\b)[^.!?]{0,40}\bany ?more\b|"
    # "I switched to Obsidian", not "after fct_orders switched to a merge strategy": a person changed their ways.
    r"\b(?:i|we|you|he|she|they)(?:['’]ve|['’]d)?\s+"
    r"(?:(?:just|recently|finally|also|have|had|then)\s+)*switched (?:to|from)\b|"
    r"\b(?:no longer|instead of|changed my mind|"
    r"now (?:use|prefer|live|work)s?|now,? not|resched\w*|postpon\w*|cancel\w*|correction|"
    r"moved (?:it|(?:the|our|my|his|her|their)(?:\s+[\w'’-]+){1,3}) to|(?:was|were|been|got|is|are) moved to|"
    r"turns out (?:that|to be|i|we|he|she|they|it|the|my|our))\b|"
    r"改成|改为|不再|取消",
    needles=(
        "more",
        "longer",
        "switched",
        "instead",
        "changed",
        "now ",
        "resched",
        "postpon",
        "cancel",
        "correction",
        "moved",
        "turns out",
    ),
)
# A statement that advises the listener: "You can use margarine instead of butter", "Try oat milk instead".
# (Not a bare imperative: "Use Markdown instead of Notion", said to an assistant, changes a standing request.)
_ADVICE = re.compile(
    r"^\W*(?:(?:and|but|so|also|maybe|perhaps)\W+)*(?:you\s+(?:can|could|should|might|may|"
    r"need\s+to|have\s+to|must|['’]d\s+better)|try)\b",
    re.IGNORECASE,
)
_GENERIC = lexicon.words("generic_words")
# Words that say when or that something changed, not what changed: two statements sharing only these
# ("the launch moved to Tuesday, March 17" / "the demo moved to Tuesday, March 10") are about different things.
_WHEN_OR_CHANGE = frozenset(
    [
        *WEEKDAY_WORDS,
        *(day + "s" for day in WEEKDAY_WORDS),
        # "may" stays a word of subject: as a verb it is too common to pass over.
        *(month for month in MONTH_WORDS if month != "may"),
        *lexicon.ordered("when_or_change"),
    ]
)
_DATE_NUMBER = re.compile(r"\d+(?:st|nd|rd|th)?")
# What was moved: "we moved the Atlas launch to March 17", "the follow-up has been postponed". Its last word
# names the thing (launch, follow-up); an earlier card of the same speaker dating one is the plan it moves.
_MOVED_OBJECT = re.compile(
    r"\b(?:moved|pushed|postponed|rescheduled|delayed)\s+(?:the|our|my|his|her|their)\s+"
    r"(?P<obj>(?:[\w'’-]+\s+){0,2}?[\w'’-]+)\s+(?:back\s+|forward\s+)?(?:to|until|till|by)\b"
    r"|\b(?:the|our|my|his|her|their)\s+(?P<obj2>(?:[\w'’-]+\s+){0,2}?[\w'’-]+)\s+"
    r"(?:has\s+been|have\s+been|was|were|is|are|got)\s+(?:moved|pushed|postponed|rescheduled|delayed)\b",
    re.IGNORECASE,
)
# What a correction says no longer holds: "instead of Thursdays at 10:00", "(no longer March 12)",
# "moved from the 3rd". An earlier card that holds all of it is the one corrected, shared subject or not.
_REPLACED = re.compile(
    r"\b(?:instead\s+of|no\s+longer|rather\s+than|previously|(?:moved|changed|switched)\s+from|"
    # "I'm pescatarian now, not vegetarian"
    r"now,?\s+not(?:\s+an?)?)"
    r"\s+(?P<old>[^.;,()!?]{1,60})",
    re.IGNORECASE,
)
# Latin letters with accents too: "Tomás", "Zoë", "Łukasz" are names as much as "Tom".
_UPPER, _LOWER = "A-ZÀ-ÖØ-Þ\u0100-\u017f", "a-zß-öø-ÿ\u0100-\u017f"
# Up to four capitalised words, joined by the particles of place and family names ("Largo do
# Chafariz de Dentro", "Parque das Nações", "Ana de Souza", "Pieter van der Berg").
PARTICLE_WORDS = frozenset("do da das dos de del della di du van von der den la le".split())
# A company may be its web address: "Booking.com", "Monday.com".
WEB_SUFFIX = r"(?:\.(?:com|io|ai|org|net|co|app|dev))"
_NAME = re.compile(
    rf"\b[{_UPPER}][{_LOWER}]+(?:\s(?:(?:{'|'.join(sorted(PARTICLE_WORDS))})\s){{0,2}}"
    rf"[{_UPPER}][{_LOWER}]+){{0,3}}{WEB_SUFFIX}?\b"
)
# Words that open a reply ("Yeah, my dogs make me happy"): capitalised, never a name.
INTERJECTIONS = lexicon.words("interjections")
_NOT_NAMES = INTERJECTIONS | lexicon.words("not_names_events")
# "I live" reads "Maya lives": the present-tense verbs first-person sentences most often use.
_PRESENT = lexicon.words("present_verbs")
_ADVERBS = lexicon.ordered("adverbs")
_ADVERB = "|".join(a.replace(" ", r"\s+") for a in _ADVERBS)
_I_VERB = re.compile(rf"\bI((?:\s+(?:{_ADVERB}))*)\s+({'|'.join(sorted(_PRESENT))})\b")


def _third_singular(verb: str) -> str:
    if verb in ("go", "do"):
        return verb + "es"
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_REPLACEMENTS = (
    (re.compile(r"\bI['’]m\b"), "{s} is"),
    (re.compile(r"\bI['’]ve\b"), "{s} has"),
    (re.compile(r"\bI['’]ll\b"), "{s} will"),
    (re.compile(r"\bI['’]d\b"), "{s} would"),
    (re.compile(r"\bI am\b"), "{s} is"),
    (re.compile(r"\bI was\b"), "{s} was"),
    (re.compile(r"\bI have\b"), "{s} has"),
    (re.compile(r"\bI don['’]t\b"), "{s} doesn't"),
    (re.compile(r"\bI do not\b"), "{s} does not"),
    (_I_VERB, lambda speaker: lambda m: f"{speaker}{m.group(1)} {_third_singular(m.group(2))}"),
    (re.compile(r"\bI\b"), "{s}"),
    (re.compile(r"\b[Mm]y\b"), "{s}'s"),
    (re.compile(r"\b[Mm]ine\b"), "{s}'s"),
    (re.compile(r"\b[Mm]yself\b"), "{s}"),
    (re.compile(r"(?<=\s)me\b"), "{s}"),
)
# Every replacement above needs one of these words; a sentence without any is left as it is.
_REPLACEABLE = re.compile(r"\bI\b|\b[Mm](?:y|ine|yself)\b|(?<=\s)me\b")


def _is_filler(sentence: str) -> bool:
    return normalize(sentence).strip(" .!?~。！？，、,～") in _FILLER


def _content_words(text: str) -> list[str]:
    return [w.casefold() for w in words(text) if len(w) > 2 and w.casefold() not in STOPWORDS]


# "Great news, Ivy lost her first tooth": the news is what follows, not a greeting.
_NEWS_OPENER = re.compile(
    r"^(?:(?:some|so\s+much)\s+)?(?:great|good|big|exciting|amazing|happy|sad|bad|fun)\s+news\b"
    r"[\s,:;!.—–-]*",
    re.IGNORECASE,
)


# A short statement of a like, a state or a habit: "I like hiking.", "I'm vegan.", "We own cats."
_SHORT_STATEMENT = re.compile(
    r"^\W*(?:i|we)(?:['’]m|\s+am|\s+(?:really\s+|also\s+|still\s+)?"
    r"(?:like|love|hate|enjoy|prefer|dislike|use|own|have|speak|play|eat|drink|live|work|study|teach|run|swim|cook))"
    r"\s+(?!(?:fine|good|ok|okay|sure|here|back|done|ready|sorry|glad|great|well|busy|tired|it|that|this|so|too)\b)\w",
    re.IGNORECASE,
)
# A schedule or a standing rule states something however short: "Atlas deploy retros happen on Fridays",
# "Rotate the staging password before each deploy", "The gym closes at 9 every Sunday".
_DAYS = "|".join(WEEKDAY_WORDS)
_STANDING = re.compile(
    rf"\b(?:{'|'.join(day + 's' for day in WEEKDAY_WORDS)}|daily|weekly|monthly|yearly)\b"
    rf"|\b(?:every|each)\s+(?:day|week|month|year|morning|evening|night|weekend|{_DAYS})\b"
    r"|\b(?:before|after)\s+(?:each|every)\b",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
# A Chinese reply that only acknowledges or thanks: "好的", "好的，记下了", "谢谢！", "没问题".
_ZH_ACK = re.compile(
    r"^(?:(?:好的?|嗯+|哦|噢|收到|明白了?|了解了?|知道了|谢谢(?:你|您)?|多谢|没问题|行|可以|对|是的|记下了|记住了|好吧|当然)"
    r"[\s，,。.！!～~、]*)+$"
)
# A Chinese question: a question mark, or a sentence-final particle of asking.
_ZH_QUESTION = re.compile(r"[？?]\s*$|[吗呢吧]\s*[。.]?\s*$")


def _informative_zh(text: str) -> bool:
    """A Chinese statement (at least four characters of Chinese) that neither only acknowledges nor asks:
    "我对青霉素过敏。", "我用 Notion 记笔记。"."""
    return len(_CJK.findall(text)) >= 4 and not _ZH_ACK.match(text) and not _ZH_QUESTION.search(text)


def informative(sentence: str) -> bool:
    """Worth remembering: says something about someone, not just greets or asks."""
    text = _NEWS_OPENER.sub("", sentence.strip())
    if not text or _is_filler(text):
        return False
    if _CJK.search(text):
        return _informative_zh(text)
    n_words = len(words(text))
    if _GREETING.match(text) and n_words < 9:
        return False
    if text.endswith("?") and n_words < 12 and not _FIRST_PERSON.search(text):
        return False
    if _YOU_STATE.search(text):  # an assistant's "Noted: you're vegetarian" restates a fact however short
        return True
    if n_words < 3:
        return bool(_NUMBER.search(text) or _SHORT_STATEMENT.match(text))
    # Any one signal will do, so the cheapest run first: the event-type and safety patterns (long
    # case-blind alternations) cost ten times the others.
    if (
        _THIRD_PERSON_SUBJECT.match(text)
        or _NUMBER.search(text)
        or _FIRST_PERSON.search(text)
        or _names(text)
        or _STANDING.search(text)
        or _SAFETY.found_in(text)
        or _ANY_TYPE.found_in(text)
    ):
        return n_words >= 4 or bool(_SHORT_STATEMENT.match(text))
    return n_words >= 10 and not _SECOND_PERSON.search(text)


# A list item opens a sentence too: "Try: 1) Progress since last sync, 2) Blockers …".
_SENTENCE_START = re.compile(r"(?:^|[.!?…:;\"“(]\s*|\n|(?<![\w.])\d{1,2}[.)]\s)\s*$")
SENTENCE_START_REACH = 3  # its longest match before the trailing space: "12)" (search_at_end)
# "Maya lives in Lisbon.": a capitalised word opening a sentence is a name when what follows is
# something people do and things rarely do. Copulas, light verbs and verbs that double as plural
# nouns stay out: "Coffee is great", "Music has a way", "Work got busy", "Safe travels", "Studies show".
_PERSON_VERBS = list(lexicon.ordered("person_verbs"))
# Sentence adverbs read like names there too ("Recently started", "Happily married"): those ending
# in "-ly" are left out by their ending (at the cost of an "Emily" opening a sentence; named anywhere
# else in the block she is still found), these by name.
_OPENING_ADVERBS = frozenset(
    """also just still never always sometimes then soon later already once twice again""".split()
)
# A copula does not say "someone" alone ("Coffee is great"), but before what people are doing it
# does: "Tomás is using Figma", "Lena was studying in Porto".
_PERSON_DOING = list(lexicon.ordered("person_doing"))
# ... or in a state only people are in: "Tomás is allergic to penicillin" (read as the speaker's once).
_PERSON_STATES = """allergic vegetarian vegan pescatarian pregnant married engaged divorced retired born""".split()
AGE_WORD_ALTERNATION = "|".join(w for w, n in NUMBER_WORDS.items() if n >= 2)
_YOU_STATE = re.compile(
    rf"\byou(?:['’]re|\s+are)\s+(?:(?:now|also|still|a|an)\s+)*(?:{'|'.join(_PERSON_STATES)})\b", re.IGNORECASE
)
_PERSON_VERB_AFTER = re.compile(
    rf"(?:\s+(?:{_ADVERB}))*\s+(?:{'|'.join(sorted(_PERSON_VERBS))})\b"
    rf"|\s+(?:is|was)\s+(?:(?:{_ADVERB}|now)\s+)*(?:{'|'.join(_PERSON_DOING)})\b"
    rf"|\s+(?:is|was)\s+(?:(?:{_ADVERB}|severely|very|mildly|now|also)\s+)*"
    rf"(?:{'|'.join(_PERSON_STATES)})\b"
    rf"|\s+(?:takes|took|is\s+on|was\s+on)\s+(?:[\w-]+\s+){{0,3}}?(?:{DOSE}|{MEDICINE}\b)"
    r"|\s+and\s+(?:I|me)\b"
    # "Ivy turns seven on March 21", "Leo is 5 now": only people turn or are an age.
    rf"|\s+(?:turns|turned|will\s+turn|is\s+turning)\s+(?:\d{{1,3}}|{AGE_WORD_ALTERNATION})\b"
    rf"|\s+is\s+(?:now\s+)?(?:\d{{1,2}}|{AGE_WORD_ALTERNATION})\s+(?:years?\s+old|now)\b"
)  # "Tomás and I are going out"


def _names(text: str, lower_vocab: frozenset[str] = frozenset(), known: frozenset[str] = frozenset()) -> list[str]:
    """Capitalised words that look like names: not a common word (``lower_vocab`` holds words the
    surrounding text also uses in lower case), and not at a sentence start unless ``known`` (names
    the surrounding text uses inside a sentence: "Tomás will take him" after "my partner Tomás")
    or followed by something people do ("Maya lives in Lisbon")."""
    found = []
    text = without_time_zones(text)
    for match in _NAME.finditer(text):
        start = match.start()
        parts = match.group(0).split(" ")
        while len(parts) > 1 and (
            _not_a_name(parts[0], lower_vocab)
            or parts[0] in PARTICLE_WORDS
            or (parts[0] in _LEADING_VERBS and search_at_end(_SENTENCE_START, text, start, SENTENCE_START_REACH))
        ):
            start += len(parts[0]) + 1  # "Thanks Max", "Bet Max loves it", "Easter Sunday Belém"
            parts = parts[1:]
        first = parts[0]
        if _not_a_name(first, lower_vocab):
            continue
        # "from Dublin February 20-27": a month or other common word ends the name; so does a particle.
        cut = next(
            (i for i, w in enumerate(parts[1:], 1) if w[0].isupper() and _not_a_name(w, lower_vocab)), len(parts)
        )
        while cut > 1 and parts[cut - 1] in PARTICLE_WORDS:
            cut -= 1
        name = " ".join(parts[:cut])
        end = start + len(name)
        if name in ABBREVIATIONS and text.startswith(".", end):
            continue  # "Dr." is a title, the name comes after it
        if (
            _opens_sentence(text, start)
            and first not in known
            and (
                first.casefold() in _OPENING_ADVERBS
                or first.endswith("ly")
                or (first.endswith("s") and first[:-1].casefold() in lower_vocab)  # "Doctors said" by a "doctor"
                or not _PERSON_VERB_AFTER.match(text, end)
            )
        ):
            continue
        found.append(name)
    return found


def _opens_sentence(text: str, at: int) -> bool:
    """Whether ``text[at:]`` opens a sentence (not after a title's full stop: "Dr. Visser")."""
    return bool(search_at_end(_SENTENCE_START, text, at, SENTENCE_START_REACH)) and not search_at_end(
        ENDS_IN_TITLE, text, at, TITLE_REACH
    )


# Verbs that open a sentence before a name: "Bet Max loves it", "Tell Ana I said hi".
_LEADING_VERBS = frozenset("Bet Guess Hope Wish Tell Ask Glad Sorry Poor Dear Miss Met Saw Meet Call Text".split())


def _not_a_name(word: str, lower_vocab: frozenset[str]) -> bool:
    return word in _NOT_NAMES or word.casefold() in STOPWORDS or word.casefold() in lower_vocab


def _canonical(name: str, speakers: Sequence[str]) -> str:
    """A nickname that starts a speaker's name ("Mel" for "Melanie") means that speaker."""
    for speaker in speakers:
        if speaker and speaker != name and len(name) >= 3 and speaker.startswith(name):
            return speaker
    return name


def named_in(texts: Sequence[str], speakers: Sequence[str] = ()) -> list[str]:
    """The names a card written from ``texts`` lists as participants (people, places and others
    alike, as extraction lists them), a speaker's nickname given as that speaker. An imported
    statement has no conversation around it: its own texts are its whole vocabulary."""
    texts = [prose(t) for t in texts if isinstance(t, str) and t.strip()]
    lower_vocab = frozenset(w for text in texts for w in words(text) if w.islower())
    known = frozenset(n.split()[0] for text in texts for n in _names(text, lower_vocab))
    found: list[str] = []
    for text in texts:
        for name in _names(text, lower_vocab, known):
            name = _canonical(name, speakers)
            if name not in found:
                found.append(name)
    return found


# "our daughter" said by Maya is Maya's daughter too; left as it is, the card reads as nobody's. Said by
# the assistant, "our pipeline" is the user's: it stays "our".
_OUR = re.compile(r"\b[Oo]ur\b")
_ASSISTANT_NAMES = frozenset({"assistant", "ai", "bot", "chatbot"})


def _quoted(body: str, part: str, *, parentheses: bool) -> bool:
    """Whether ``part`` sits inside quotes in ``body`` (someone else's words, or a line written for the
    user to say: its "I" is not the speaker), or, with ``parentheses``, inside brackets (an assistant's
    "(My daughter has a peanut allergy …)" is a translation for the user)."""
    at = body.find(part)
    if at < 0:
        return False
    # Where the part's words begin: "(My daughter …" begins inside, "Open items (planned …)" does not.
    begin = next((i for i, ch in enumerate(part) if ch.isalnum()), 0)
    before = body[: at + begin]
    if before.count('"') % 2 or before.count("“") > before.count("”"):
        return True
    return parentheses and before.count("(") > before.count(")")


# Words quoted inside a sentence are someone's own: 'Tomás told me "my back hurts"' is his back.
_INLINE_QUOTE = re.compile(r'"[^"\n]+"|“[^”\n]+”')


def third_person(sentence: str, speaker: str, *, ours: bool = True) -> str:
    """Rewrite a first-person sentence so the card names who it is about (``ours``: "our" too);
    what it quotes stays as it was said."""
    kept = [m.span() for m in _INLINE_QUOTE.finditer(sentence)]
    if kept:
        pieces, last = [], 0
        for start, end in kept:
            pieces += [third_person(sentence[last:start], speaker, ours=ours), sentence[start:end]]
            last = end
        return "".join(pieces) + third_person(sentence[last:], speaker, ours=ours)
    out = sentence
    for pattern, replacement in _REPLACEMENTS if _REPLACEABLE.search(sentence) else ():
        out = pattern.sub(replacement(speaker) if callable(replacement) else replacement.format(s=speaker), out)
    return _OUR.sub(f"{speaker}'s", out) if ours else out


def classify(text: str) -> str:
    for kind, pattern in _TYPE_RULES:
        if pattern.found_in(text):
            return kind
    return "other"


def criticality(text: str) -> str:
    if _SAFETY.found_in(text):
        return "safety"
    if _IDENTITY.found_in(text):
        return "identity"
    if _PREFERENCE.found_in(text):
        return "preference"
    return "routine"


def _tense_status(text: str, tense: str | None) -> str:
    if re.search(r"\b(cancel\w*|called off)\b|取消", text, re.IGNORECASE):
        return "cancelled"
    if tense == "future" or (tense in (None, "unknown") and _PLANNED.search(text)):
        return "planned"
    if tense == "present" or _ONGOING.search(text):
        return "ongoing"
    if tense == "past" or _PAST.search(text):
        return "occurred"
    return "unknown"


@lru_cache(maxsize=4096)
def _mentions(text: str, anchor: datetime) -> tuple:
    """Time mentions of a text, cached: a card's text is usually one of the parts already resolved."""
    return tuple(find_time_mentions(text, anchor))


_CLAUSE_BREAK = re.compile(r"[,;:!?]|\s(?:and|but|so|then)\s", re.IGNORECASE)


def _clause(text: str, span: tuple[int, int]) -> str:
    """The clause of ``text`` holding ``span``: from the break before it to the break after it."""
    start = max((m.end() for m in _CLAUSE_BREAK.finditer(text, 0, span[0])), default=0)
    after = _CLAUSE_BREAK.search(text, span[1])
    return text[start : after.start() if after else len(text)]


def _verb_tenses(text: str) -> tuple[bool, bool, bool]:
    """Whether ``text`` speaks in the past, of a plan, or of an arrangement to come."""
    return bool(_PAST.search(text)), bool(_PLANNED.search(text)), bool(_ARRANGED.search(text))


# Past verbs whose object is still to come: a promise, a request, an agreement, a deadline set.
_PROMISED = re.compile(
    r"\b(?:promised|agreed|said|told|asked|offered|committed|needed|wanted|due|deadline)\b", re.IGNORECASE
)


def _week_later(value: str | None, weeks: int) -> str | None:
    """A day ("2026-01-15") or an instant ("2026-01-15T17:30:00+01:00") ``weeks`` weeks on."""
    if not value:
        return value
    moved = (datetime if "T" in value else date).fromisoformat(value) + timedelta(days=7 * weeks)
    return moved.isoformat()


def time_for(text: str, anchor: datetime | None) -> dict[str, Any]:
    """The first resolved time expression in ``text``; 'just'/'this morning' means the mention day."""
    if anchor is None:
        return {}
    for mention in _mentions(text, anchor):
        if mention.start is None and mention.end is None:
            continue
        if mention.precision == "instant" and mention.original_text.strip().lower() in ("now", "right now", "现在"):
            continue  # "now" describes a state, not when something happened
        start, end, tense = mention.start, mention.end, mention.tense
        if _WEEKDAY_REF.match(mention.original_text) and start:
            # "On Friday" is this week's Friday, unless the verb says otherwise: said on a Tuesday,
            # "we went camping on Friday" was the Friday before and "I will start there on Monday"
            # is the Monday to come. The mention's own clause speaks first ("I got the job, I start
            # on Monday"); a clause with no tense of its own ("On Friday, we went") takes the sentence's.
            clause = _clause(text, mention.span) if mention.span else text
            past, planned, arranged = _verb_tenses(clause)
            if not (past or planned or arranged) and not _PRESENT_AUX.search(clause):
                # What stands before a colon introduces the sentence and does not date it ("Got it: Tomás
                # takes Biscuit to the vet on Thursday").
                lead = text.rfind(":", 0, mention.span[0]) + 1 if mention.span else 0
                past, planned, arranged = _verb_tenses(text[lead:])
            lead_word = mention.original_text.split()[0].lower()
            if lead_word == "for" or (lead_word == "by" and (not past or _PROMISED.search(text))):
                # What is booked "for Thursday" or promised "by Wednesday" lies ahead, whatever the tense
                # of the booking or the promise ("we had packed by Friday" stays in the past).
                past, planned = False, True
            if start[:10] > anchor.date().isoformat() and past and not planned:
                start, end, tense = _week_later(start, -1), _week_later(end, -1), "past"
            elif start[:10] < anchor.date().isoformat() and not past and (planned or arranged):
                start, end, tense = _week_later(start, 1), _week_later(end, 1), "future"
        return {
            "happened_start": start,
            "happened_end": end,
            "original_text": mention.original_text,
            "precision": mention.precision,
            "basis": mention.basis,
            "_tense": tense,
        }
    just = _JUST.search(text)
    if just and _PAST.search(text):
        day = anchor.date().isoformat()
        return {
            "happened_start": day,
            "happened_end": day,
            "original_text": just.group(0),
            "precision": "day",
            "basis": "relative",
            "_tense": "past",
        }
    return {}


def _other_speaker(speaker: str, speakers: Sequence[str]) -> str | None:
    others = [s for s in speakers if s and s != speaker]
    return others[0] if len(others) == 1 else None


def _unpossessed(word: str) -> str:
    """A word without its possessive ending: "Ivy's lessons" are about Ivy."""
    return word[:-2] if word.endswith(("'s", "’s")) else word


def _bare(found: Iterable[str]) -> frozenset[str]:
    return frozenset(map(_unpossessed, found))


@lru_cache(maxsize=4096)
def _card_words(title: str, summary: str) -> frozenset[str]:
    """A timeline card's content words, bare (every statement of a block is compared with the same cards)."""
    return _bare(_content_words(f"{title} {summary}"))


def _tokens(text: str) -> frozenset[str]:
    """Every word but stop words, numbers of any length included ("10:00" is "10", "00")."""
    return frozenset(w.casefold() for w in words(text) if w.casefold() not in STOPWORDS)


@lru_cache(maxsize=4096)
def _card_tokens(title: str, summary: str) -> frozenset[str]:
    """A card's tokens (``_tokens``), bare."""
    return _bare(_tokens(f"{title} {summary}"))


def replaced_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """What a correction says no longer holds (``_REPLACED``): all its words, and the names among them
    ("no longer use Notion": Notion); both empty when it names nothing."""
    found, names = set(), set()
    for m in _REPLACED.finditer(text):
        old = m.group("old")
        found |= _tokens(old)
        names |= {
            w.casefold()
            for w in words(old)
            if w[:1].isupper() and w.casefold() not in STOPWORDS and w.casefold() not in _WHEN_OR_CHANGE
        }
    return frozenset(found), frozenset(names)


def moved_thing(text: str) -> tuple[str, frozenset[str]] | None:
    """The thing a statement says was moved ("moved the Atlas launch to …"): its last word, and the
    words before it; None when it moves nothing."""
    m = _MOVED_OBJECT.search(text)
    if m is None:
        return None
    found = [w.casefold() for w in words(m.group("obj") or m.group("obj2"))]
    # Stop words out ("follow-up" is read as "follow", "up"), possessive endings off.
    found = [_unpossessed(w) for w in found if w not in STOPWORDS]
    if not found or found[-1] in _WHEN_OR_CHANGE:
        return None
    return found[-1], frozenset(found[:-1])


def _supersedes(
    event_words: set[str],
    participant: str,
    timeline: Sequence[dict[str, Any]],
    replaced: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
    moved: tuple[str, frozenset[str]] | None = None,
    when: str | None = None,
) -> list[int]:
    """The newest timeline event of the same person this statement corrects: one sharing at least
    two words of subject (not dates, numbers or words of change: "the launch moved to Tuesday" does
    not correct "the demo moved to Tuesday"), or holding what the statement says it replaces: all of
    it ("instead of Thursdays at 10:00"; a single plain word needs a word of subject too), or the
    names in it ("I no longer use Notion" ends the card that keeps notes in Notion). A statement that
    moves a thing to ``when`` ("we moved the Atlas launch to March 17") ends the newest card of the
    same speaker whose title names the thing, with another date ("the launch is on March 3"). Of
    several, a card of the statement's own day ``when`` comes first."""
    best: tuple[int, int] | None = None
    said, old, old_names = _bare(event_words), _bare(replaced[0]), _bare(replaced[1])
    for item in timeline:
        # The same person's own statement: "use coconut oil instead of butter", said to Joanna, corrects
        # nothing Joanna said about her cake. (A card's first participant is who said it.)
        if (item.get("participants") or [None])[0] != participant:
            continue
        title, summary = str(item.get("title", "")), str(item.get("summary", ""))
        shared = said & _card_words(title, summary)
        subject = {
            w
            for w in shared - _GENERIC - _WHEN_OR_CHANGE
            if w != participant.casefold() and not _DATE_NUMBER.fullmatch(w)
        }
        tokens = _card_tokens(title, summary)
        holds_old = bool(old) and old <= tokens
        names_old = bool(old_names) and old_names <= tokens
        # The moved thing must be what the card is about (its title), not a word of its story: "… once the
        # launch has settled" in a card about the orchestrator does not date the launch.
        moves_it = (
            moved is not None
            and when is not None
            and moved[0] in _card_tokens(title, "")
            and item.get("happened_start") not in (None, when)
        )
        # A statement that moves a named thing to a date corrects the card dating that thing, not any card
        # sharing two of its words ("the Atlas launch" with a card about Atlas that mentions the launch).
        by_subject = len(subject) >= 2 and (moved is None or when is None)
        if by_subject or names_old or moves_it or (holds_old and (len(old) >= 2 or subject - old)):
            # A statement dated like the card is about that day's thing: "Dr. Visser is ill on Thursday so
            # the follow-up is cancelled" ends the follow-up dated that Thursday before the first visit,
            # which shares more words with it ("vet", "clinic").
            same_day = moved is None and when and str(item.get("happened_start") or "")[:10] == str(when)[:10]
            rank = (
                len(subject)
                + (len(old) if holds_old else len(old_names) if names_old else 0)
                + (1 + len(moved[1] & tokens) if moves_it else 0)
                + (2 if same_day else 0),
                item["id"],
            )
            if best is None or rank > best:
                best = rank
    return [best[1]] if best else []


# ----------------------------------------------------------------------------- explicit corrections
# "Change the Cedar service port from 6389 to 8247", "将 Cedar 服务的数据库从 MySQL 改为 PostgreSQL": a
# correction that names what it changes ends the one earlier statement of the same speaker holding that
# subject (and the old value, when it is named); none found, or more than one, and nothing is ended.
# A possibility or a plan ("I might switch my editor to Vim", "我打算改用 Obsidian") is never a correction.
_ZH_STOP = r"[^，,。！？!?；;\n]"
_EN_STOP = r"[^.!?;,\n]"
_CORRECTIONS = (
    (
        "zh-change",
        re.compile(
            rf"(?:把|将)\s*(?P<subject>{_ZH_STOP}{{2,80}}?)\s*(?:从\s*(?P<prev>{_ZH_STOP}{{1,60}}?)\s*)?"
            rf"(?:改为|改成|更改为|更新为|替换为|换成)\s*(?P<new>{_ZH_STOP}{{1,80}})"
        ),
    ),
    (
        "zh-stop",
        re.compile(
            rf"不再(?:用|使用|吃|喝|去|住在)\s*(?P<prev>{_ZH_STOP}{{1,40}}?)\s*了?\s*[，,]?\s*"
            rf"(?:改用|换用|转用|现在用|改成|改为)\s*(?P<new>{_ZH_STOP}{{1,60}})"
        ),
    ),
    (
        "zh-set",
        re.compile(
            rf"(?P<subject>{_ZH_STOP}{{2,40}}?)\s*(?:从\s*(?P<prev>{_ZH_STOP}{{1,40}}?)\s*)?"
            rf"(?:改成了?|改为了?|换成了?|更改为)\s*(?P<new>{_ZH_STOP}{{1,60}})"
        ),
    ),
    (
        "en-change",
        re.compile(
            rf"\b(?:change[sd]?|changing|update[sd]?|updating|set|switch(?:ed|es)?)\s+(?P<subject>{_EN_STOP}{{2,80}}?)"
            rf"\s+(?:from\s+(?P<prev>{_EN_STOP}{{1,60}}?)\s+)?to\s+(?P<new>{_EN_STOP}{{1,80}})",
            re.IGNORECASE,
        ),
    ),
    (
        "en-now",
        re.compile(
            rf"^\W*(?:(?:actually|correction|update|so|and|also)\W+)*(?P<subject>(?:the|my|our)\s+{_EN_STOP}{{2,60}}?)"
            rf"\s+(?:is|are)\s+now\s+(?P<new>{_EN_STOP}{{1,60}})",
            re.IGNORECASE,
        ),
    ),
    (
        # "so I'm pescatarian now, not vegetarian", "Lena is the PM now, not Jonas"
        "en-now-not",
        re.compile(
            rf"\b(?:am|is|are|['’]m|['’]re)\s+(?P<new>{_EN_STOP}{{1,40}}?)\s+now\s*,?\s+not\s+(?:an?\s+)?"
            rf"(?P<prev>{_EN_STOP}{{1,40}}?)\s*(?=$|[.!?;,])",
            re.IGNORECASE,
        ),
    ),
    (
        "en-not-but",
        re.compile(
            rf"\bnot\s+(?!only\b|just\b|merely\b)(?P<prev>{_EN_STOP}{{1,40}}?)\s*,?\s+but\s+(?:rather\s+)?"
            rf"(?P<new>{_EN_STOP}{{1,60}})",
            re.IGNORECASE,
        ),
    ),
)
_LEADING = re.compile(r"^(?:(?:the|a|an|my|our|your|his|her|their)\s+)+|^(?:我们?的|我的|我)", re.IGNORECASE)
_TRAILING = re.compile(r"\s+(?:value|setting)$|[了的]$", re.IGNORECASE)
_PRONOUN_SUBJECT = frozenset("it this that he she they we i you there".split())


def _clean_capture(text: str | None) -> str:
    if not text:
        return ""
    text = _TRAILING.sub("", _LEADING.sub("", text.strip())).strip(" \"'“”‘’")
    return text.casefold()


def explicit_correction(text: str) -> dict[str, str] | None:
    """The correction ``text`` states (its pattern, subject, previous and new values), or None;
    ``{"pattern": "conditional"}`` when it would be one but says a plan or a possibility."""
    for name, pattern in _CORRECTIONS:
        m = pattern.search(text)
        if m is None:
            continue
        found = {k: _clean_capture(v) for k, v in m.groupdict().items()}
        subject, prev, new = found.get("subject", ""), found.get("prev", ""), found.get("new", "")
        if not new or (not subject and not prev) or prev == new:
            continue
        if subject and not (set(words(subject)) - {*_PRONOUN_SUBJECT, *STOPWORDS}):
            continue  # "it is now done": no subject to look for
        if CONDITIONAL.search(text):
            return {"pattern": "conditional"}
        return {"pattern": name, "subject": subject, "prev": prev, "new": new}
    return None


def _phrase(text: str) -> re.Pattern[str]:
    """``text`` as a phrase: flexible spaces, and no ASCII letter, digit or hyphen just around it
    ("cedar service port" is not in "cedar-2 service port")."""
    body = r"\s*".join(re.escape(w) for w in text.split())
    return re.compile(rf"(?<![A-Za-z0-9_-]){body}(?![A-Za-z0-9_]|-[A-Za-z0-9])")


def _plain(text: str, speaker: str) -> str:
    text = text.casefold().replace(f"{speaker.casefold()}'s ", "").replace(f"{speaker.casefold()}’s ", "")
    return re.sub(r"\b(?:the|a|an|my|our)\s+", "", text)


def correction_targets(
    correction: dict[str, str], speaker: str, items: Iterable[tuple[Any, str, Sequence[str], str | None]]
) -> list[Any]:
    """The keys of ``items`` (key, text, participants, status) the correction may end: live statements
    of ``speaker`` that hold its subject and previous value, and not already its new value."""
    wanted = [_phrase(c) for c in (correction.get("subject"), correction.get("prev")) if c]
    new = _phrase(correction["new"])
    found = []
    for key, text, participants, status in items:
        if status == "superseded" or (list(participants) or [None])[0] != speaker:
            continue
        plain = _plain(text, speaker)
        if all(p.search(plain) for p in wanted) and not (correction.get("prev") and new.search(plain)):
            found.append(key)
    return found


def _corrected_later(parts: Sequence[str], speaker: str, said_at: Any, timeline: Sequence[dict[str, Any]]) -> list[int]:
    """The later statement that corrects this one: a card stored before this one was (threads imported
    one after another are derived out of time order), said after it by the same speaker, stating an
    explicit correction this statement is a target of. A correction naming the old value ends every
    statement holding it; one that does not ends one card at most, so not this one when it already
    ended another (the unique-target rule). Empty when none or several corrections qualify."""
    if not isinstance(said_at, str) or not said_at:
        return []
    text = " ".join(parts)
    found = []
    # The block's timeline is found by its summary's words; the correction of one statement is looked
    # for by that statement's own words too.
    peek_for = getattr(timeline, "peek_for", None)
    named = peek_for(" ".join(_content_words(text))) if peek_for is not None else []
    seen: set[int] = set()
    for item in [*timeline, *named]:
        if item["id"] in seen:
            continue
        seen.add(item["id"])
        if item.get("status") != "active" or str(item.get("mentioned_at") or "") <= said_at:
            continue
        correction = explicit_correction(f"{item.get('title', '')}. {item.get('summary', '')}")
        if correction is None or correction["pattern"] == "conditional":
            continue
        if item.get("ends") and not correction.get("prev"):
            continue
        if correction_targets(correction, speaker, [((item["id"],), text, [speaker], None)]) and (
            (item.get("participants") or [None])[0] == speaker
        ):
            found.append(item["id"])
    return found if len(found) == 1 else []


def _resolve_correction(
    correction: dict[str, str],
    speaker: str,
    timeline: Sequence[dict[str, Any]],
    earlier: Sequence[dict[str, Any]],
    temporal: dict[str, Any],
) -> None:
    """Sets the one card ``correction`` ends on ``temporal``: an earlier card of this block
    (``supersedes_earlier``) or a timeline event (``supersedes_event_ids``); nothing when none or
    several hold what it corrects (the unique-target rule: no closest match is ever changed)."""

    def of_timeline(items: Sequence[dict[str, Any]]) -> list[Any]:
        return correction_targets(
            correction,
            speaker,
            (
                (
                    ("t", item["id"]),
                    f"{item.get('title', '')} {item.get('summary', '')}",
                    item.get("participants") or [],
                    item.get("status"),
                )
                for item in items
            ),
        )

    here = correction_targets(
        correction,
        speaker,
        (
            (
                ("e", i),
                " ".join([card["title"], card["summary"], *card.get("quotes", [])]),
                card["temporal"].get("participants", []),
                None,
            )
            for i, card in enumerate(earlier)
        ),
    )
    found = here + of_timeline(timeline)
    look_for = getattr(timeline, "look_for", None)
    if not found and look_for is not None:
        found = of_timeline(look_for(" ".join(c for c in (correction.get("subject"), correction.get("prev")) if c)))
    found = list(dict.fromkeys(found))
    if len(found) > 1 and correction.get("prev"):
        # Every statement holding the named old value says the one fact that ended ("I'm vegetarian"
        # said in two conversations): all of them end.
        for kind, key in found:
            temporal.setdefault("supersedes_earlier" if kind == "e" else "supersedes_event_ids", []).append(key)
        return
    if len(found) != 1:
        # The unique-target rule: no closest match is ever changed. Why not is kept with the card.
        why = (
            "no earlier statement of the speaker holds it"
            if not found
            else (f"{len(found)} earlier statements hold it, so which one is meant cannot be told")
        )
        temporal["correction_unchanged"] = {**{k: correction[k] for k in ("subject", "prev", "new")}, "why": why}
        return
    kind, key = found[0]
    temporal["supersedes_earlier" if kind == "e" else "supersedes_event_ids"] = [key]


def _card(
    parts: list[str],
    message: dict[str, Any],
    speaker: str,
    speakers: Sequence[str],
    sources: list[int],
    question: str | None,
    timeline: Sequence[dict[str, Any]],
    lower_vocab: frozenset[str] = frozenset(),
    known: frozenset[str] = frozenset(),
    body: str = "",
    earlier: Sequence[dict[str, Any]] = (),
    later_stored: bool = False,
) -> dict[str, Any]:
    """One card from ``parts`` of ``message`` (``body``: the message's prose, where the parts were cut).
    ``later_stored``: statements said after this message are already stored (a later correction may
    end this card)."""
    joined = " ".join(parts)
    # An assistant's "our" is the user's; a person in the assistant's seat (LoCoMo's second speaker) is a person.
    assistant = message.get("role") == "assistant" and speaker.casefold() in _ASSISTANT_NAMES
    rewritten = [
        p if _quoted(body, p, parentheses=assistant) else third_person(p, speaker, ours=not assistant) for p in parts
    ]
    anchor = None
    if message.get("created_at"):
        try:
            anchor = parse_timestamp(message["created_at"])
        except Exception:
            anchor = None
    # The first statement (in order) that dates itself dates the card; parts are cached, so
    # this avoids scanning the joined text a second time.
    time = next((found for part in parts if (found := time_for(part, anchor))), {})
    tense = time.pop("_tense", None)
    participants = [speaker]
    other = _other_speaker(speaker, speakers)
    if other and (_SECOND_PERSON.search(joined) or (question and other in (question or ""))):
        participants.append(other)
    for name in _names(joined, lower_vocab, known):
        name = _canonical(name, speakers)
        if name not in participants:
            participants.append(name)
    kind = classify(joined)
    summary = " ".join(rewritten)
    if question:
        summary = f"Asked “{clip(question, 160)}”, {speaker} said: {summary}"
    temporal: dict[str, Any] = {
        "mentioned_at": message.get("created_at"),
        "status": _tense_status(joined, tense),
        "event_type": kind if kind in EVENT_TYPES else "other",
        "participants": participants[:24],
        "precision": "unknown",
        "basis": "unknown",
    }
    temporal.update({k: v for k, v in time.items() if v is not None})
    mentioned = str(temporal.get("mentioned_at") or "")[:10]
    if temporal["status"] == "unknown" and mentioned and str(time.get("happened_start") or "")[:10] > mentioned:
        # "Let's plan a trip to Lisbon, March 19 to 24", said in January: what has a date ahead is planned.
        temporal["status"] = "planned"
    changing = ""
    correction = next((c for p in parts if (c := explicit_correction(p))), None)
    if correction is not None:
        # An explicit correction ends its one target or nothing; a conditional one ends nothing.
        if correction["pattern"] != "conditional":
            _resolve_correction(correction, speaker, timeline, earlier, temporal)
        else:
            temporal["correction_unchanged"] = {"why": "said as a possibility or a plan, not as a change"}
    elif _CHANGE_CUE.found_in(joined):
        # Only the statements that say something changed: "I need to write the postmortem for the duplicate
        # orders. By the way, I no longer use Notion" corrects the notes app, not the duplicate orders.
        # Advice ("You can use coconut oil instead of butter") changes nothing of the speaker's own.
        cued = [p for p in parts if _CHANGE_CUE.found_in(p)]
        changing = " ".join(p for p in cued if not _ADVICE.match(p)) if cued else joined
        if CONDITIONAL.search(changing):
            changing = ""  # "I might stop using Notion": a possibility changes nothing yet
    if correction is None and later_stored:
        later = _corrected_later(parts, speaker, message.get("created_at"), timeline)
        if later:
            temporal["superseded_by_event_ids"] = later
    if changing:
        said = set(_content_words(changing))
        replaced = replaced_words(changing)
        moved = moved_thing(changing)
        when = temporal.get("happened_start")
        superseded = _supersedes(said, speaker, timeline, replaced, moved, when)
        look_for = getattr(timeline, "look_for", None)
        if not superseded and look_for is not None and (moved is not None or replaced[1]):
            # The block's timeline is found by its summary's words; what a correction names ("the Atlas
            # launch", "Notion") may be older than anything they reach, so it is looked for by name.
            named = [moved[0], *sorted(moved[1])] if moved is not None else sorted(replaced[1])
            superseded = _supersedes(said, speaker, look_for(" ".join(named)), replaced, moved, when)
        if superseded:
            temporal["supersedes_event_ids"] = superseded
        # ... or a card of this same block, when it moves what that one dated: "my appointment is on March 3",
        # then "moved my appointment to March 10". Only the titles are compared: cards of one block share
        # their conversation's words, and a looser match ended unrelated plans there.
        dated = [
            {
                "id": i,
                "title": card["title"],
                "participants": card["temporal"].get("participants", []),
                "happened_start": card["temporal"].get("happened_start"),
            }
            for i, card in enumerate(earlier)
            if when and card["temporal"].get("happened_start") not in (None, when)
        ]
        here = _supersedes(said, speaker, dated, replaced, moved, when) if dated else []
        if here:
            temporal["supersedes_earlier"] = here
    tags = [w for w, _ in Counter(_content_words(joined)).most_common(5)]
    return {
        # A card opening with a request ("Can you help me keep track of family stuff?") is titled
        # by what it states.
        "title": clip(next((r for r in rewritten if not r.rstrip().endswith(("?", "？"))), rewritten[0]), 120),
        "summary": clip(summary, 600),
        "tags": tags,
        "quotes": [clip(p, 500) for p in parts[:4]],
        "source_message_ids": sources,
        "temporal": temporal,
        "scope": "user",
        "criticality": criticality(joined),
    }


# A sentence that says the speaker turns to something else ("By the way, I no longer use Notion").
_TOPIC_SHIFT = re.compile(
    r"^\W*(?:by\s+the\s+way|btw|on\s+(?:another|a\s+different|an\s+unrelated)\s+note|"
    r"unrelated(?:ly)?|separately|another\s+thing|oh,?\s+and|also,?\s+fyi|fyi)\b",
    re.IGNORECASE,
)


def _topics(parts: list[str], turns: frozenset[int] = frozenset()) -> list[list[str]]:
    """A message's statements cut where the speaker turns to another topic (or, at ``turns``, to
    another subject): a card holds one fact or one change, and a correction said in passing must not
    be titled by what came before it."""
    topics: list[list[str]] = []
    for index, part in enumerate(parts):
        if not topics or index in turns or _TOPIC_SHIFT.match(part):
            topics.append([])
        topics[-1].append(part)
    return topics


# "I'm vegetarian, and Ivy has a peanut allergy": two facts of two people, each ending on its own (a
# correction of the diet must not end the allergy). Cut before "and"/"but" when a new subject and
# its verb follow.
_NEW_SUBJECT = re.compile(
    r"(?:,\s*|\s+)(?:and|but)\s+(?=(?:I|I['’]m|we|he|she|they|[A-Z][a-z]+(?:['’]s\s+\w+)?)\s+"
    r"(?:has|have|had|is|was|are|were|likes?|loves?|hates?|lives?|works?|uses?|prefers?|owns?|speaks?|"
    r"takes?|eats?|drinks?)\b)"
)


def _statements(text: str) -> tuple[list[str], frozenset[int]]:
    """The informative statements of a message, a compound sentence of two subjects cut in two, and
    the positions where a new subject begins."""
    parts: list[str] = []
    turns: set[int] = set()
    for sentence in sentences(text):
        if not informative(sentence):
            continue
        pieces = [p.strip() for p in _NEW_SUBJECT.split(sentence)]
        if len(pieces) > 1 and all(len(words(p)) >= 3 and informative(p) for p in pieces):
            turns.update(range(len(parts) + 1, len(parts) + len(pieces)))
            parts.extend(pieces)
        else:
            parts.append(sentence)
    return parts, frozenset(turns)


# An assistant's receipt of what it was told: "Noted: the launch is on March 3.", "Got it — …", "好的，记下了：…".
_ECHO_OPENER = re.compile(
    r"^\W*(?:(?:noted|got\s+it|understood|will\s+do|saved|recorded|remembered|i['’]ll\s+remember(?:\s+that)?)"
    r"\s*[:：,，—–-]|(?:ok(?:ay)?|sure|done)\s*[:：—–-])\s*"
    r"|^(?:好的?[，,]?\s*)?(?:记下了|已记下|记住了|已记录|收到|明白了?|了解)\s*[：:，,]\s*",
    re.IGNORECASE,
)
ECHO_OVERLAP = 0.5  # the share of an echo's words the statement must hold
ECHO_OVERLAP_BARE = 0.6  # ... when the assistant restates it without "Noted:" ("Weekly sync: Thursdays at 10:00.")


def _echo_words(text: str) -> frozenset[str]:
    """Content words, a Chinese run as its character pairs ("数据库是" as 数据, 据库, 库是)."""
    found: set[str] = set()
    for w in _tokens(text):
        if _CJK.search(w) and len(w) > 2:
            found |= {w[i : i + 2] for i in range(len(w) - 1)}
        else:
            found.add(w)
    return frozenset(found)


def _echoed(part: str, before: Sequence[dict[str, Any]], events: list[dict[str, Any]], opener: bool) -> int | None:
    """The card (its position in ``events``) an assistant's receipt ``part`` restates: of the cards of
    the user's message just before it, the one sharing most of its words, when that message holds
    half of them (most of them without an opener such as "Noted:")."""
    said = next((m for m in reversed(before) if m.get("role") == "user"), None)
    if said is None:
        return None
    cards = [i for i, card in enumerate(events) if said["id"] in card["source_message_ids"]]
    echo = _echo_words(_ECHO_OPENER.sub("", part))
    needed = ECHO_OVERLAP if opener else ECHO_OVERLAP_BARE
    if not cards or not echo or len(echo & _echo_words(said.get("text") or "")) / len(echo) < needed:
        return None
    return max(cards, key=lambda i: (len(echo & _echo_words(" ".join(events[i]["quotes"]))), -i))


def extract_events_offline(context: dict[str, Any]) -> dict[str, Any]:
    target = context.get("target", {})
    messages = [m for m in target.get("messages", []) if m.get("role") != "system"]
    speakers = context.get("speakers") or list(dict.fromkeys(m.get("speaker") for m in messages if m.get("speaker")))
    timeline = context.get("timeline", [])
    later_stored = bool(context.get("later_stored"))
    texts = [prose(m.get("text") or "") for m in messages]
    lower_vocab = frozenset(w for text in texts for w in words(text) if w.islower())
    known = frozenset(n.split()[0] for text in texts for n in _names(text, lower_vocab))
    events: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    named_kin: dict[str, tuple[int, list[tuple[str, str | None]]]] = {}  # speaker -> (message index, people)
    for index, (message, text) in enumerate(zip(messages, texts)):
        if message.get("role") == "tool":
            previous = message
            continue
        speaker = message.get("speaker") or (UNNAMED_USER if message.get("role") == "user" else "Assistant")
        parts, turns = _statements(text)
        receipt = opener = False
        if parts and message.get("role") == "assistant":
            opener = bool(_ECHO_OPENER.match(parts[0]))
            receipt = opener or speaker.casefold() in _ASSISTANT_NAMES
        kin = [(m.group("name"), _KIN_GENDER[m.group("kin").casefold()]) for m in _KIN_NAMED.finditer(text)]
        before = named_kin.get(speaker)
        if kin:
            named_kin[speaker] = (index, kin)
        if parts:
            sources = [message["id"]]
            question = None
            asked = previous and (previous.get("text") or "").rstrip().endswith("?")
            if asked and previous.get("speaker") != message.get("speaker") and len(words(" ".join(parts))) < 12:
                # A short answer needs its question to make sense on its own.
                sources.insert(0, previous["id"])
                question = previous.get("text")
            first = len(events)
            for topic in _topics(parts, turns):
                anchor_parts = [p for p in topic if time_for(p, _anchor(message))]
                if len(anchor_parts) >= 2:
                    rest = [p for p in topic if p not in anchor_parts]
                    for i, part in enumerate(anchor_parts):
                        group = [part] + (rest if i == 0 else [])
                        events.append(
                            _card(
                                group,
                                message,
                                speaker,
                                speakers,
                                sources,
                                question,
                                timeline,
                                lower_vocab,
                                known,
                                text,
                                events,
                                later_stored,
                            )
                        )
                else:
                    events.append(
                        _card(
                            topic,
                            message,
                            speaker,
                            speakers,
                            sources,
                            question,
                            timeline,
                            lower_vocab,
                            known,
                            text,
                            events,
                            later_stored,
                        )
                    )
            if receipt:
                # The receipt ends with what it restates: a correction of the statement ends it too. A
                # receipt of two facts ("you're vegetarian and Ivy has a peanut allergy") is two cards,
                # each restating its own.
                for at in range(first, len(events)):
                    said = (events[at].get("quotes") or [""])[0] if at > first else parts[0]
                    echoed = _echoed(said, messages[:index], events[:first], opener)
                    if echoed is not None:
                        events[at]["temporal"]["restates_earlier"] = [echoed]
                    if at == first and echoed is None:
                        break  # a reply that does not restate its first statement is no receipt
            meant = _meant(parts[0], before, index) if not kin else None
            if meant and not _someone_before(text, parts[0]) and meant not in events[-1]["temporal"]["participants"]:
                events[-1]["temporal"]["participants"].append(meant)
        previous = message
    return {
        "should_extract": bool(events),
        "reason": f"{len(events)} informative statements" if events else "no informative statements",
        "events": events,
    }


_KIN_WORD = re.compile(rf"\b(?:{'|'.join(_KIN_GENDER)}|mommy|daddy)\b", re.IGNORECASE)


def _someone_before(text: str, part: str) -> bool:
    """Whether the message names or points at someone before ``part`` ("Mum arrives on Friday. She ...")."""
    at = text.find(part)
    before = text[:at] if at >= 0 else ""
    return bool(_KIN_WORD.search(before) or _names(before))


def _meant(first: str, named: tuple[int, list[tuple[str, str | None]]] | None, index: int) -> str | None:
    """Whom a card opening with "she" or "he" means, from the same speaker's message just before
    (at most one message between) that named a sister, a colleague ...: the one person whose kin
    word fits."""
    pronoun = _THIRD_PERSON_SUBJECT.match(first)
    if not pronoun or named is None or index - named[0] > 2:
        return None
    wanted = "f" if pronoun.group("pronoun").casefold() == "she" else "m"
    fitting = list(dict.fromkeys(name for name, gender in named[1] if gender in (wanted, None)))
    return fitting[0] if len(fitting) == 1 else None


def _anchor(message: dict[str, Any]) -> datetime | None:
    try:
        return parse_timestamp(message["created_at"]) if message.get("created_at") else None
    except Exception:
        return None
