"""What a number column measures, and which two number columns may be paired: one stated rule for union and joins.

Two number columns of similar value ranges look alike to every vector: a contractor's ``id`` (1..60) and a day rate
``rate_eur`` (30..90), a ``population`` and a ``weight_kg``.  Union alignment and the numerical join therefore ask,
besides their own similarity, that the two columns measure compatible *quantities*.  A quantity is a dimension and,
where known, a unit (``money:eur``, ``mass:kg``, ``year``); a row counter is an identifier by its values alone (see
below), any other column's quantity is read from its name first, then from its cells, then from its values:

1. **Name.**  The name is cut into tokens (case changes, punctuation, spaces; a letter run keeps the digits glued to
   it, so ``km2`` stays whole).  A name with ``per`` or ``/`` between two units names a ratio (``deaths_per_100k``)
   and has no quantity, except the speeds ``km/h``, ``m/s``, ``mph``.  Otherwise the last *unit* token decides
   (:data:`UNITS`: ``kg``, ``eur``, ``usd``, ``$``, ``%``, ``pct``, ``km``, ``nm``, ``celsius``, ``minutes``, ...);
   tokens that are units only at the end of a name (``min``, ``h``, ``s``, ``long``) count only there and only
   when no dimension word of another kind is in the name, so ``min_price`` and ``price_min`` are prices and
   ``delay_min`` minutes; ``c`` / ``f`` are degrees at the end of a name with a temperature word (``temp_max_c``).
   Without a unit, the first *dimension
   word* in the order of :data:`WORDS` decides (``age`` before ``year``: ``age_years`` is an age; ``rank`` before
   ``population``).  Words that name different things in different tables (``length`` of a film or a road,
   ``amount`` of money or of goods, ``number``, ``volume``, ``rate``) name nothing.
2. **Cells.**  A column without a unit from its name whose distinct values mostly (:data:`SYMBOL_SHARE`) carry
   ``$`` / ``€`` / ``£`` / ``¥`` / ``%`` gets that currency or ``fraction``.
3. **Values.**  A name of the year family (``year``, ``founded``, ``est``, ``yob``) holds a year only when its values
   are years (:func:`_years`: integers in [1700, 2100]); otherwise it names nothing.  A column whose name and cells
   say nothing is a ``year`` when its values are years, a ``fraction`` when they all lie in [0, 1] and are not all
   0 / 1, and an ``identifier`` when it is a row number (each value once, a run of integers from 0 or 1, at least
   :data:`ROW_NUMBER_MIN` of them).

A row number outranks the name: a column whose values are exactly 1..n (or 0..n-1), n its row count and at least
:data:`ROW_COUNTER_MIN`, each once in any order and no cell empty, is an ``identifier`` whatever its name says.
Tables written with their row counter in a column called ``Age`` or ``Area`` exist (UGEN-V1 has them, of 7 rows),
and a counter measures nothing; a real age or area whose values are exactly the row numbers is rare enough not to
weigh against it, and a ``rank`` over every row is such a permutation, an identifier of its rows as well.  The start
at 0 is accepted because a data frame's written index starts there.  Only one or two rows are too few: any small
count is 1..n there.

4. **Scale of money.**  Money is the dimension where one word spans the widest range: a salary, a price and a
   nation's GDP are all money, and a salary column aligns with a GDP column as readily as with another salary
   column (both are numbers of similar spread in their own tables).  What tells a per-person amount from an
   aggregate is how large it is, so a money column also carries its *scale* (``money:usd@4``): the decade of the
   median of its non-zero cells' absolute values (``floor(log10)``, every cell counted), clipped to :data:`SCALES`.
   Two money columns are compatible only when their scales differ by at most :data:`SCALE_DECADES` decades (medians
   within a factor of 1,000): a salary (about 10^4 to 10^5) pairs with salaries, monthly pay and bonuses, not with
   budgets or GDPs written in dollars (10^9 and up).  The scale is the values' as written, not corrected by a
   multiplier the name states (``gdp_bn``, ``box_office_musd``): tables state their multipliers inconsistently
   (the sample lake's box office columns, all in millions, are ``box_office_musd``, ``box_office_$m`` and
   ``gross``; reading ``musd`` as 10^6 split them and lost 14 of its planted pairs), so a GDP written in billions
   (10^3) stays compatible with a salary.  Names do not decide either: ``income``, ``cost`` and ``revenue`` are a
   person's or a nation's alike, while the values say which.  Other dimensions keep no scale: a city's and a
   country's population are both counts of people, and unioning them is a question of the tables, not of the
   numbers.

Two quantities are compatible (:func:`compatible`) when either is unknown, or their dimensions are equal and their
units, where both are known, too, and for money their scales (where both are known) are close: a year is not a
count, an id is not a rate, kilograms are not pounds, a salary is not a GDP.  Text
columns have no quantity and stay compatible with everything; the rule never adds a pair, it only removes pairs
between number columns that measure different things, so every bound the searches prune with stays a bound.

Quantities are stored as text (``"money:eur"``, ``""`` for none) in ``column_vectors`` and ``numeric_sets`` and
searched as small integer codes (:func:`codes`), whose compatibility is one lookup in :data:`COMPATIBLE`.
:data:`RULE` names this rule's version: a lake indexed under another version is re-read.
"""
from __future__ import annotations

import re
import unicodedata

import numpy as np

from .encoders.columns import parse_numbers, profile_column

#: Version of the rule; part of what column vectors and numeric sets are built from.
RULE = "q3"
#: Share of a column's distinct values that must carry a currency or percent sign for the sign to be its unit.
SYMBOL_SHARE = 0.5
#: Share of the distinct numbers that must be years for a column to be a year.
YEAR_SHARE = 0.95
YEAR_RANGE = (1700, 2100)
#: Fewest values of a row-number column (0..n-1 or 1..n, each once) that a column with no quantity from its name or
#: cells needs to be an identifier.
ROW_NUMBER_MIN = 10
#: Fewest rows of a table whose column of exactly its row numbers is an identifier whatever its name.
ROW_COUNTER_MIN = 3
#: Scales a money column may have (decades of its median value, name multipliers included), and the most two
#: compatible money columns may differ by.
SCALES = range(-2, 16)
SCALE_DECADES = 2

#: unit token -> (dimension, unit).  Currency codes, SI and imperial units, percent forms.
UNITS: dict[str, tuple[str, str]] = {}
for _tokens, _dim, _unit in (
        (("usd", "dollar", "dollars", "musd", "busd", "kusd", "$"), "money", "usd"),
        (("eur", "euro", "euros", "meur", "beur", "keur", "€"), "money", "eur"),
        (("gbp", "£"), "money", "gbp"),
        (("jpy", "yen", "¥"), "money", "jpy"),
        (("chf",), "money", "chf"), (("cad",), "money", "cad"), (("aud",), "money", "aud"),
        (("cny", "rmb", "yuan"), "money", "cny"), (("inr", "rupee", "rupees"), "money", "inr"),
        (("rub",), "money", "rub"), (("brl",), "money", "brl"), (("mxn",), "money", "mxn"),
        (("sek",), "money", "sek"), (("nok",), "money", "nok"), (("dkk",), "money", "dkk"),
        (("pln",), "money", "pln"), (("krw",), "money", "krw"), (("zar",), "money", "zar"),
        (("kg", "kgs", "kilogram", "kilograms", "kilo", "kilos"), "mass", "kg"),
        (("gram", "grams", "gramme", "grammes"), "mass", "g"), (("mg", "milligram", "milligrams"), "mass", "mg"),
        (("lb", "lbs", "pound", "pounds"), "mass", "lb"), (("oz", "ounce", "ounces"), "mass", "oz"),
        (("tonne", "tonnes", "ton", "tons"), "mass", "t"),
        (("km", "kilometre", "kilometres", "kilometer", "kilometers"), "length", "km"),
        (("metre", "metres", "meter", "meters"), "length", "m"),
        (("cm", "centimetre", "centimetres", "centimeter", "centimeters"), "length", "cm"),
        (("mm", "millimetre", "millimetres", "millimeter", "millimeters"), "length", "mm"),
        (("nm", "nanometre", "nanometres", "nanometer", "nanometers"), "length", "nm"),
        (("mi", "mile", "miles"), "length", "mi"), (("ft", "feet", "foot"), "length", "ft"),
        (("inch", "inches"), "length", "in"), (("yd", "yard", "yards"), "length", "yd"),
        (("km2", "km²", "sqkm"), "area", "km2"), (("m2", "m²", "sqm"), "area", "m2"),
        (("sqft", "ft2"), "area", "ft2"), (("sqmi", "mi2"), "area", "mi2"),
        (("acre", "acres"), "area", "acre"), (("hectare", "hectares"), "area", "ha"),
        (("second", "seconds", "sec", "secs"), "duration", "s"),
        (("ms", "millisecond", "milliseconds"), "duration", "ms"),
        (("minute", "minutes", "mins"), "duration", "min"), (("hour", "hours", "hr", "hrs"), "duration", "h"),
        (("day", "days"), "duration", "day"), (("week", "weeks"), "duration", "week"),
        (("month", "months"), "duration", "month"),
        (("mph",), "speed", "mph"), (("kmh", "kph"), "speed", "kmh"), (("knot", "knots", "kn"), "speed", "kn"),
        (("celsius", "degc", "°c"), "temperature", "c"), (("fahrenheit", "degf", "°f"), "temperature", "f"),
        (("kelvin",), "temperature", "k"),
        (("pct", "percent", "percentage", "perc", "%"), "fraction", ""),
        (("lat", "latitude", "latitud", "latitudine", "breite", "breitengrad", "breedtegraad", "szerokosc",
          "широта", "纬度"), "latitude", ""),
        (("lng", "lon", "longitude", "longitud", "longitudine", "laenge", "länge", "laengengrad", "längengrad",
          "lengtegraad", "dlugosc", "долгота", "经度"), "longitude", ""),
        (("id", "ids", "uuid", "guid", "fips", "zip", "zipcode", "postcode", "isbn", "isbn10", "isbn13", "issn",
          "ean", "upc", "sku"), "identifier", "")):
    for _t in _tokens:
        UNITS[_t] = (_dim, _unit)

#: Tokens that are a unit only as the last token of a name (elsewhere they abbreviate something else).
TAIL_UNITS = {"min": ("duration", "min"), "h": ("duration", "h"), "s": ("duration", "s"),
              "long": ("longitude", ""), "ha": ("area", "ha")}
#: ``c`` / ``f`` are degrees only in a name that also has a temperature word (``temp_max_c``, ``max temp (°C)``).
TEMPERATURE_TAILS = {"c": ("temperature", "c"), "f": ("temperature", "f")}
#: dimension words, in the order that decides between two of them in one name.
WORDS: tuple[tuple[str, frozenset], ...] = (
    ("duration", frozenset({"age", "duration", "runtime", "tenure", "elapsed"})),
    ("rank", frozenset({"rank", "ranking"})),
    ("fraction", frozenset({"share", "ratio", "proportion", "fraction", "probability", "prob"})),
    ("temperature", frozenset({"temp", "temperature", "tmax", "tmin"})),
    ("speed", frozenset({"speed", "velocity"})),
    ("money", frozenset({"price", "prices", "cost", "costs", "salary", "salaries", "wage", "wages", "pay",
                         "income", "revenue", "revenues", "earnings", "profit", "budget", "gross", "fee", "fees",
                         "fare", "fares", "spend", "spending", "gdp", "compensation"})),
    ("count", frozenset({"count", "counts", "headcount", "population", "pop", "inhabitants", "residents"})),
    ("mass", frozenset({"weight", "mass"})),
    ("length", frozenset({"height", "elevation", "altitude", "distance", "stature", "depth", "width"})),
    ("area", frozenset({"area", "acreage"})),
    ("year", frozenset({"year", "years", "yr", "yrs", "yyyy", "founded", "established", "est", "yob", "born",
                        "built"})),
)
_TEMPERATURE_WORDS = WORDS[3][1]
_SPEED_PAIRS = {("km", "h"): ("speed", "kmh"), ("km", "hr"): ("speed", "kmh"), ("km", "hour"): ("speed", "kmh"),
                ("mi", "h"): ("speed", "mph"), ("mi", "hr"): ("speed", "mph"), ("m", "s"): ("speed", "m/s"),
                ("metre", "s"): ("speed", "m/s"), ("meter", "s"): ("speed", "m/s")}
_SYMBOLS = {"$": ("money", "usd"), "€": ("money", "eur"), "£": ("money", "gbp"), "¥": ("money", "jpy"),
            "%": ("fraction", "")}
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TOKEN = re.compile(r"[$€£¥%]|°[cf]|[^\W_]+", re.UNICODE)

_BASES = ({f"{d}:{u}" if u else d for d, u in [*UNITS.values(), *TAIL_UNITS.values(), *TEMPERATURE_TAILS.values(),
                                                *_SPEED_PAIRS.values(), *_SYMBOLS.values()]}
          | {d for d, _ in WORDS})
#: Every quantity the rule can give, in a fixed order: its code is its position (0: none).
QUANTITIES: tuple[str, ...] = ("",) + tuple(sorted(
    _BASES | {f"{q}@{k}" for q in _BASES if q.partition(":")[0] == "money" for k in SCALES}))
_CODE = {q: i for i, q in enumerate(QUANTITIES)}


def _compatibility(quantities: tuple[str, ...]) -> np.ndarray:
    """Which quantities may be paired: the empty one with any; others when their dimensions are equal, their units
    equal or one unstated, and their scales (``@k``) within :data:`SCALE_DECADES` decades or one unstated.  Computed
    over all pairs at once from each part's codes: a pair at a time in Python, the 170k pairs cost every process
    that imports this module 0.2 s (a refresh's driver and workers, every query)."""
    split = [(q.partition("@")[0].partition(":")[::2], q.partition("@")[2]) for q in quantities]
    dim = np.unique([d for (d, _), _ in split], return_inverse=True)[1]
    unit = np.unique([u for (_, u), _ in split], return_inverse=True)[1]
    no_unit = np.array([not u for (_, u), _ in split])
    scale = np.array([int(k) if k else 0 for _, k in split])
    no_scale = np.array([not k for _, k in split])
    empty = np.array([not q for q in quantities])

    def either(flags: np.ndarray) -> np.ndarray:
        return flags[:, None] | flags[None, :]

    return either(empty) | ((dim[:, None] == dim[None, :])
                            & (either(no_unit) | (unit[:, None] == unit[None, :]))
                            & (either(no_scale) | (np.abs(scale[:, None] - scale[None, :]) <= SCALE_DECADES)))


#: ``COMPATIBLE[i, j]``: quantities of codes i and j may be paired.
COMPATIBLE = _compatibility(QUANTITIES)


def tokens(name: str | None) -> list[str]:
    """Tokens of a column name: lower case, split at case changes and punctuation, currency / percent signs and
    ``°C`` / ``°F`` as tokens of their own, digits kept with the letters they follow (``km2``, ``isbn13``)."""
    if not name:
        return []
    text = unicodedata.normalize("NFKC", _CAMEL.sub(" ", name)).lower()
    text = text.replace("km²", "km2").replace("m²", "m2")
    return [t for t in _TOKEN.findall(text) if not t.isdigit()]


def name_quantity(name: str | None) -> tuple[str, str] | None:
    """(dimension, unit) the name states, or None; see the module docstring, step 1."""
    toks = tokens(name)
    if not toks:
        return None
    if "/" in (name or "") or "per" in toks:
        for a, b in zip(toks, toks[1:]):
            if (a, b) in _SPEED_PAIRS:
                return _SPEED_PAIRS[(a, b)]
        return None
    found = None
    for i, t in enumerate(toks):
        if i + 1 < len(toks) and (t, toks[i + 1]) in _SPEED_PAIRS:
            found = _SPEED_PAIRS[(t, toks[i + 1])]
        elif t in UNITS:
            if t in ("km", "mi", "m", "metre", "meter") and i > 0 and toks[i - 1] in ("sq", "square"):
                found = ("area", {"km": "km2", "mi": "mi2"}.get(t, "m2"))
            elif found is None or found[0] != "speed" or t not in ("h", "hr", "hour", "s"):
                found = UNITS[t]
    last = toks[-1]
    present = set(toks)
    worded = {dim for dim, words in WORDS if present & words}
    if last in TAIL_UNITS and (found is None or found[0] != "speed") and worded <= {TAIL_UNITS[last][0]}:
        found = TAIL_UNITS[last]
    elif last in TEMPERATURE_TAILS and (_TEMPERATURE_WORDS.intersection(toks) or "°" in (name or "")):
        found = TEMPERATURE_TAILS[last]
    if found is not None:
        return found
    for dim, words in WORDS:
        if present & words:
            return dim, ""
    return None


def _years(numbers: np.ndarray) -> bool:
    ok = numbers[np.isfinite(numbers)]
    if not ok.size:
        return False
    year = (ok == np.round(ok)) & (ok >= YEAR_RANGE[0]) & (ok <= YEAR_RANGE[1])
    return bool(year.sum() >= YEAR_SHARE * ok.size)


def quantity(name: str | None, values: list[str], counts: np.ndarray, numbers: np.ndarray, rows: int) -> str:
    """The quantity of a number column called ``name`` of ``rows`` rows whose distinct cells are ``values``
    (normalised text), each seen ``counts`` times, with ``numbers`` their numeric values (NaN where a cell is not a
    number); ``""`` when nothing says.  See the module docstring for the rule."""
    if _row_numbers(numbers, counts, rows):
        return "identifier"
    found = name_quantity(name)
    if found is not None and found[0] == "year":
        found = found if _years(numbers) else None
    elif found is None or not found[1]:
        signs = _cell_sign(values)
        if signs is not None and (found is None or found[0] == signs[0]):
            found = signs
    if found is None:
        found = _value_quantity(numbers, counts)
    if found is None:
        return ""
    dim, unit = found
    text = f"{dim}:{unit}" if unit else dim
    scale = _scale(numbers, counts) if dim == "money" else None
    return text if scale is None else f"{text}@{scale}"


def _scale(numbers: np.ndarray, counts: np.ndarray) -> int | None:
    """The scale of a money column (module docstring, step 4): the decade of the median non-zero absolute value,
    every cell counted; None when no cell is a non-zero number."""
    x = np.abs(np.asarray(numbers, dtype=np.float64))
    ok = np.isfinite(x) & (x > 0)
    if not ok.any():
        return None
    x, w = x[ok], np.asarray(counts, dtype=np.int64)[ok]
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    median = x[np.searchsorted(np.cumsum(w), (w.sum() + 1) // 2)]
    return min(max(int(np.floor(np.log10(median))), SCALES.start), SCALES.stop - 1)


def cells_quantity(name: str | None, cells) -> str:
    """:func:`quantity` of a number column given as its cells (an Arrow array or a list), profiled as the embed stage
    profiles columns (normalised distinct values and their counts)."""
    prof = profile_column(cells)
    return quantity(name, prof.values, prof.counts, parse_numbers(prof.values), len(prof.row_codes))


def _cell_sign(values: list[str]) -> tuple[str, str] | None:
    if not values:
        return None
    for sign, q in _SYMBOLS.items():
        if sum(sign in v for v in values) >= SYMBOL_SHARE * len(values):
            return q
    return None


def _value_quantity(numbers: np.ndarray, counts: np.ndarray) -> tuple[str, str] | None:
    ok = np.isfinite(numbers)
    x = numbers[ok]
    if x.size == 0:
        return None
    if _years(x):
        return "year", ""
    if x.size >= 2 and x.min() >= 0 and x.max() <= 1 and (x != np.round(x)).any():
        return "fraction", ""
    if x.size >= ROW_NUMBER_MIN and np.all(np.asarray(counts)[ok] == 1) and (x == np.round(x)).all():
        lo = x.min()
        if lo in (0, 1) and x.max() - lo == x.size - 1:
            return "identifier", ""
    return None


def _row_numbers(numbers: np.ndarray, counts: np.ndarray, rows: int) -> bool:
    """Whether the column's cells are exactly 1..rows or 0..rows-1, each once (distinct values = rows, so no cell
    is empty or repeated)."""
    if rows < ROW_COUNTER_MIN or numbers.size != rows or not np.isfinite(numbers).all():
        return False
    lo = numbers.min()
    return bool(lo in (0, 1) and numbers.max() - lo == rows - 1 and (numbers == np.round(numbers)).all()
                and (np.asarray(counts) == 1).all())


def codes(quantities) -> np.ndarray:
    """int16 codes of quantity texts (None and texts another rule version wrote: 0, compatible with all)."""
    return np.array([_CODE.get(q or "", 0) for q in quantities], dtype=np.int16)


def compatible(a: str, b: str) -> bool:
    """Whether two quantity texts may be paired."""
    return bool(COMPATIBLE[_CODE.get(a or "", 0), _CODE.get(b or "", 0)])


def pair_mask(query_codes: np.ndarray, column_codes: np.ndarray) -> np.ndarray:
    """(q, n) bool: which query columns may pair with which lake columns."""
    return COMPATIBLE[np.asarray(query_codes)[:, None], np.asarray(column_codes)[None, :]]


def pairs_compatible(a_codes: np.ndarray, b_codes: np.ndarray) -> np.ndarray:
    """Element-wise: whether ``a_codes[i]`` may pair with ``b_codes[i]``."""
    return COMPATIBLE[np.asarray(a_codes), np.asarray(b_codes)]
