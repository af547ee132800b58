"""Region names that follow a comma in place cells: ``Augusta, Maine``, ``Trenton, New Jersey``, ``Lyon, France``.

A cell of one word, a comma and one to three words has the shape of "Last, First" (``Washington, George``), which
the segment rule keeps whole (:mod:`discovery.transforms.segments`, rule 3).  When the words after the comma name a
region, the cell is a place and its head is the segment other tables write alone.  Regions are the sovereign states and
the first-level divisions most often written after a city (the United States with DC, Canada, Australia, the
United Kingdom's countries), lower case as :func:`discovery.ground.normalize.normalize_array` leaves them.

Left out, because they are also common given names and a "Last, First" cell is then as likely as a place: Chad,
Jordan, Israel, Victoria.  Georgia, Virginia and Indiana stay: as tails they name the state far more often in
tables of places, and a person misread gains only a surname segment beside the whole-cell vector.
"""
from __future__ import annotations

_US = (
    "alabama", "alaska", "arizona", "arkansas", "california", "colorado", "connecticut", "delaware", "florida",
    "georgia", "hawaii", "idaho", "illinois", "indiana", "iowa", "kansas", "kentucky", "louisiana", "maine",
    "maryland", "massachusetts", "michigan", "minnesota", "mississippi", "missouri", "montana", "nebraska", "nevada",
    "new hampshire", "new jersey", "new mexico", "new york", "north carolina", "north dakota", "ohio", "oklahoma",
    "oregon", "pennsylvania", "rhode island", "south carolina", "south dakota", "tennessee", "texas", "utah",
    "vermont", "virginia", "washington", "west virginia", "wisconsin", "wyoming", "district of columbia", "d.c.",
    "dc", "puerto rico", "guam",
)
_DIVISIONS = (
    "alberta", "british columbia", "manitoba", "new brunswick", "newfoundland and labrador", "nova scotia",
    "ontario", "prince edward island", "quebec", "saskatchewan", "yukon", "nunavut", "northwest territories",
    "new south wales", "queensland", "south australia", "tasmania", "western australia", "northern territory",
    "england", "scotland", "wales", "northern ireland",
)
_COUNTRIES = (
    "afghanistan", "albania", "algeria", "andorra", "angola", "argentina", "armenia", "australia", "austria",
    "azerbaijan", "bahamas", "bahrain", "bangladesh", "barbados", "belarus", "belgium", "belize", "benin", "bhutan",
    "bolivia", "bosnia and herzegovina", "botswana", "brazil", "brunei", "bulgaria", "burkina faso", "burundi",
    "cambodia", "cameroon", "canada", "cape verde", "central african republic", "chile", "china", "colombia",
    "comoros", "congo", "costa rica", "croatia", "cuba", "cyprus", "czech republic", "czechia", "denmark",
    "djibouti", "dominica", "dominican republic", "ecuador", "egypt", "el salvador", "equatorial guinea", "eritrea",
    "estonia", "eswatini", "ethiopia", "fiji", "finland", "france", "gabon", "gambia", "germany", "ghana", "greece",
    "grenada", "guatemala", "guinea", "guinea-bissau", "guyana", "haiti", "honduras", "hungary", "iceland", "india",
    "indonesia", "iran", "iraq", "ireland", "italy", "ivory coast", "jamaica", "japan", "kazakhstan", "kenya",
    "kiribati", "kosovo", "kuwait", "kyrgyzstan", "laos", "latvia", "lebanon", "lesotho", "liberia", "libya",
    "liechtenstein", "lithuania", "luxembourg", "madagascar", "malawi", "malaysia", "maldives", "mali", "malta",
    "mauritania", "mauritius", "mexico", "moldova", "monaco", "mongolia", "montenegro", "morocco", "mozambique",
    "myanmar", "namibia", "nepal", "netherlands", "new zealand", "nicaragua", "niger", "nigeria", "north korea",
    "north macedonia", "norway", "oman", "pakistan", "palau", "palestine", "panama", "papua new guinea", "paraguay",
    "peru", "philippines", "poland", "portugal", "qatar", "romania", "russia", "rwanda", "samoa", "san marino",
    "saudi arabia", "senegal", "serbia", "seychelles", "sierra leone", "singapore", "slovakia", "slovenia",
    "solomon islands", "somalia", "south africa", "south korea", "south sudan", "spain", "sri lanka", "sudan",
    "suriname", "sweden", "switzerland", "syria", "taiwan", "tajikistan", "tanzania", "thailand", "togo", "tonga",
    "trinidad and tobago", "tunisia", "turkey", "turkmenistan", "tuvalu", "uganda", "ukraine",
    "united arab emirates", "united kingdom", "united states", "uruguay", "uzbekistan", "vanuatu", "vatican city",
    "venezuela", "vietnam", "yemen", "zambia", "zimbabwe", "usa", "uk", "uae",
)

#: Every region name, normalised (lower case, single spaces).
REGIONS = frozenset(_US + _DIVISIONS + _COUNTRIES)
