"""Words that answer a question asked in a broader word.

People ask in class words ("what pets does Ana have?", "which airline did we pick?") and say
the instance ("our dog Rex", "KLM flights"): no lexical ranking joins the two. This small,
hand-written lexicon maps everyday class words to the words that usually answer them; a query
holding a class word also looks for its answers, at a lower weight (``RELATED_WEIGHT``), so a
message that says the class word itself still ranks first. It is deterministic and offline,
and general on purpose: no entry names a person, project or brand of any dataset.
"""

from __future__ import annotations

from functools import lru_cache

from core.search.analyze import analyze

_PETS = (
    "dog dogs puppy cat cats kitten turtle turtles fish hamster rabbit bunny parrot bird guinea pig snake lizard "
    "horse pony gecko ferret"
)
_FAMILY = (
    "mom mother dad father parents son daughter kids children brother sister wife husband grandma grandpa "
    "grandmother grandfather aunt uncle cousin niece nephew"
)
_CHILDREN = "son daughter kids kid baby toddler"
_INSTRUMENTS = "guitar piano violin drums clarinet flute saxophone trumpet cello ukulele harp keyboard banjo"
_SPORTS = (
    "football soccer basketball baseball tennis golf hockey volleyball swimming running cycling skiing "
    "surfing boxing yoga climbing rugby cricket badminton skating marathon"
)
_HOBBIES = (
    "painting drawing reading hiking camping cooking baking gardening photography fishing dancing singing "
    "knitting pottery writing surfing kayaking sketching crafts"
)
_JOB = "job work career profession occupation position role hired employer company"
_ART = "painting drawing sculpture pottery sketch canvas watercolor mural"
_MOVIES = "movie film cinema watched"
_MUSIC = "song songs album band concert music"
_TRAVEL = "trip travel vacation holiday visit visited flight flew fly"
_FLIGHT = "flight flights fly flew plane airport airways airlines"
_HEALTH = "doctor physician clinic appointment hospital dentist nurse"
_ILLNESS = "sick ill flu cold fever infection"
_INJURY = "injured injury hurt broke broken sprained surgery"
_EXERCISE = "gym workout running yoga training exercise"
_SCHOOL = "school college university class course degree study studying"
_PARTNER = "wife husband boyfriend girlfriend spouse partner fiance fiancee"
_HOME = "house apartment flat home"
_VOLUNTEER = "volunteer volunteering donate donated fundraiser charity nonprofit shelter"
_AWARD = "award prize won trophy medal"
_GIFT = "gift present"
_MEAL = "breakfast lunch dinner"
_FOOD = "pizza pasta sushi tacos curry salad soup burger sandwich cake cookies bread"
_DRINK = "coffee tea wine beer juice"
_RESTAURANT = "restaurant cafe diner bistro"
_VEHICLE = "car truck bike motorcycle van"
_CLOTHES = "shirt dress jacket jeans shoes sneakers boots"
_SEASON = "spring summer autumn fall winter"
_CELEBRATION = "christmas easter thanksgiving halloween birthday wedding anniversary party"
# Asking what was chosen ("which airline did we pick?") while the memory says what was done about it
# ("I booked the KLM flights", "we decided to stay on Airflow").
_CHOICE = "choose chose chosen pick picked select selected decide decided opted booked settled"
# Asking where someone stays while the memory names the place booked ("we booked an apartment in Alfama").
_LODGING = "hotel hostel apartment airbnb villa cabin guesthouse motel resort rented booked"
_COUNTRIES = (
    "america usa canada mexico brazil argentina chile peru colombia england britain uk ireland scotland "
    "france germany spain portugal italy greece netherlands belgium switzerland austria sweden norway "
    "denmark finland iceland poland russia ukraine turkey egypt morocco kenya nigeria africa india china "
    "japan korea thailand vietnam indonesia philippines singapore australia zealand israel"
)

CLASSES: dict[str, str] = {
    "pet": _PETS,
    "pets": _PETS,
    "animal": _PETS,
    "animals": _PETS,
    "family": _FAMILY,
    "relatives": _FAMILY,
    "children": _CHILDREN,
    "child": _CHILDREN,
    "kids": _CHILDREN,
    "parents": "mom mother dad father",
    "parent": "mom mother dad father",
    "siblings": "brother sister",
    "sibling": "brother sister",
    "instrument": _INSTRUMENTS,
    "instruments": _INSTRUMENTS,
    "sport": _SPORTS,
    "sports": _SPORTS,
    # Not "activity": it names religious, physical or commute activities as often as hobbies.
    "hobby": _HOBBIES,
    "hobbies": _HOBBIES,
    "pastime": _HOBBIES,
    "job": _JOB,
    "profession": _JOB,
    "occupation": _JOB,
    "art": _ART,
    "artwork": _ART,
    "movie": _MOVIES,
    "movies": _MOVIES,
    "film": _MOVIES,
    "music": _MUSIC,
    "song": _MUSIC,
    "trip": _TRAVEL,
    "travel": _TRAVEL,
    "vacation": _TRAVEL,
    "holiday": _TRAVEL,
    "airline": _FLIGHT,
    "flight": _FLIGHT,
    "doctor": _HEALTH,
    "medical": _HEALTH,
    "illness": _ILLNESS,
    "sick": _ILLNESS,
    "injury": _INJURY,
    "accident": _INJURY,
    "exercise": _EXERCISE,
    "fitness": _EXERCISE,
    "workout": _EXERCISE,
    "education": _SCHOOL,
    "school": _SCHOOL,
    "degree": _SCHOOL,
    "partner": _PARTNER,
    "spouse": _PARTNER,
    "home": _HOME,
    "house": _HOME,
    "charity": _VOLUNTEER,
    "volunteer": _VOLUNTEER,
    "community": _VOLUNTEER,
    "award": _AWARD,
    "prize": _AWARD,
    "gift": _GIFT,
    "present": _GIFT,
    "meal": _MEAL,
    "food": _FOOD,
    "dish": _FOOD,
    "recipe": _FOOD,
    "drink": _DRINK,
    "beverage": _DRINK,
    "restaurant": _RESTAURANT,
    "vehicle": _VEHICLE,
    "car": _VEHICLE,
    "clothes": _CLOTHES,
    "clothing": _CLOTHES,
    "outfit": _CLOTHES,
    "season": _SEASON,
    "celebration": _CELEBRATION,
    "holidays": _CELEBRATION,
    "choose": _CHOICE,
    "chose": _CHOICE,
    "pick": _CHOICE,
    "picked": _CHOICE,
    "select": _CHOICE,
    "decide": _CHOICE,
    "decided": _CHOICE,
    "country": _COUNTRIES,
    "countries": _COUNTRIES,
    "stay": _LODGING,
    "staying": _LODGING,
    "accommodation": _LODGING,
    "lodging": _LODGING,
}

RELATED_WEIGHT = 0.2
ABSENT_WEIGHT = 0.5


@lru_cache(maxsize=1)
def _related_stems() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for word, answers in CLASSES.items():
        for key in analyze(word):
            out.setdefault(key, set()).update(analyze(answers))
    return {key: frozenset(stems - {key}) for key, stems in out.items()}


def related_weights(
    terms: list[str], weight: float = RELATED_WEIGHT, absent: frozenset[str] = frozenset()
) -> dict[str, float] | None:
    """Extra query terms for the class words among ``terms`` (analysed), with their weight;
    None when the query has no class word. The query's own terms keep weight 1; the answers of a
    class word in ``absent`` (one no document holds) get ``ABSENT_WEIGHT``: they stand in for it."""
    table = _related_stems()
    own = set(terms)
    extra: dict[str, float] = {}
    for term in sorted(own):
        share = ABSENT_WEIGHT if term in absent else weight
        for stem in table.get(term, ()):
            if stem not in own:
                extra[stem] = max(extra.get(stem, 0.0), share)
    return extra or None


def class_words(terms: list[str]) -> set[str]:
    """The analysed class words among ``terms``."""
    return {term for term in terms if term in _related_stems()}
