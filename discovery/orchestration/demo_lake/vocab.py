"""Built-in word lists the sample lake is generated from.

Everything the generator writes comes from these lists and a seeded random generator, so the lake needs no network
and no downloaded data.  Place names are real (they make the lake read like real exports, and homonymous cities such
as Paris, France / Paris, United States are what makes a multi-column key necessary); people, companies, products,
titles and teams are synthetic combinations of common words, which gives a large name space with few accidental
collisions between unrelated tables.
"""
from __future__ import annotations

#: (country, ISO 3166 alpha-2, continent, capital, currency)
COUNTRIES = (
    ("Argentina", "AR", "South America", "Buenos Aires", "ARS"), ("Australia", "AU", "Oceania", "Canberra", "AUD"),
    ("Austria", "AT", "Europe", "Vienna", "EUR"), ("Belgium", "BE", "Europe", "Brussels", "EUR"),
    ("Brazil", "BR", "South America", "Brasilia", "BRL"), ("Canada", "CA", "North America", "Ottawa", "CAD"),
    ("Chile", "CL", "South America", "Santiago", "CLP"), ("China", "CN", "Asia", "Beijing", "CNY"),
    ("Colombia", "CO", "South America", "Bogota", "COP"), ("Czechia", "CZ", "Europe", "Prague", "CZK"),
    ("Denmark", "DK", "Europe", "Copenhagen", "DKK"), ("Egypt", "EG", "Africa", "Cairo", "EGP"),
    ("Finland", "FI", "Europe", "Helsinki", "EUR"), ("France", "FR", "Europe", "Paris", "EUR"),
    ("Germany", "DE", "Europe", "Berlin", "EUR"), ("Greece", "GR", "Europe", "Athens", "EUR"),
    ("India", "IN", "Asia", "New Delhi", "INR"), ("Ireland", "IE", "Europe", "Dublin", "EUR"),
    ("Italy", "IT", "Europe", "Rome", "EUR"), ("Japan", "JP", "Asia", "Tokyo", "JPY"),
    ("Kenya", "KE", "Africa", "Nairobi", "KES"), ("Mexico", "MX", "North America", "Mexico City", "MXN"),
    ("Morocco", "MA", "Africa", "Rabat", "MAD"), ("Netherlands", "NL", "Europe", "Amsterdam", "EUR"),
    ("New Zealand", "NZ", "Oceania", "Wellington", "NZD"), ("Nigeria", "NG", "Africa", "Abuja", "NGN"),
    ("Norway", "NO", "Europe", "Oslo", "NOK"), ("Peru", "PE", "South America", "Lima", "PEN"),
    ("Poland", "PL", "Europe", "Warsaw", "PLN"), ("Portugal", "PT", "Europe", "Lisbon", "EUR"),
    ("South Africa", "ZA", "Africa", "Pretoria", "ZAR"), ("South Korea", "KR", "Asia", "Seoul", "KRW"),
    ("Spain", "ES", "Europe", "Madrid", "EUR"), ("Sweden", "SE", "Europe", "Stockholm", "SEK"),
    ("Switzerland", "CH", "Europe", "Bern", "CHF"), ("Thailand", "TH", "Asia", "Bangkok", "THB"),
    ("Turkey", "TR", "Asia", "Ankara", "TRY"), ("United Kingdom", "GB", "Europe", "London", "GBP"),
    ("United States", "US", "North America", "Washington", "USD"), ("Vietnam", "VN", "Asia", "Hanoi", "VND"),
)

#: (city, country) pairs; several names occur in two countries on purpose.
CITIES = (
    ("Buenos Aires", "Argentina"), ("Cordoba", "Argentina"), ("Rosario", "Argentina"), ("Mendoza", "Argentina"),
    ("Sydney", "Australia"), ("Melbourne", "Australia"), ("Perth", "Australia"), ("Brisbane", "Australia"),
    ("Vienna", "Austria"), ("Graz", "Austria"), ("Salzburg", "Austria"), ("Brussels", "Belgium"),
    ("Antwerp", "Belgium"), ("Ghent", "Belgium"), ("Sao Paulo", "Brazil"), ("Rio de Janeiro", "Brazil"),
    ("Salvador", "Brazil"), ("Toronto", "Canada"), ("Montreal", "Canada"), ("Vancouver", "Canada"),
    ("London", "Canada"), ("Hamilton", "Canada"), ("Victoria", "Canada"), ("Santiago", "Chile"),
    ("Valparaiso", "Chile"), ("Shanghai", "China"), ("Beijing", "China"), ("Shenzhen", "China"),
    ("Chengdu", "China"), ("Bogota", "Colombia"), ("Medellin", "Colombia"), ("Cartagena", "Colombia"),
    ("Prague", "Czechia"), ("Brno", "Czechia"), ("Copenhagen", "Denmark"), ("Aarhus", "Denmark"),
    ("Cairo", "Egypt"), ("Alexandria", "Egypt"), ("Helsinki", "Finland"), ("Tampere", "Finland"),
    ("Paris", "France"), ("Lyon", "France"), ("Marseille", "France"), ("Toulouse", "France"), ("Nice", "France"),
    ("Berlin", "Germany"), ("Hamburg", "Germany"), ("Munich", "Germany"), ("Cologne", "Germany"),
    ("Frankfurt", "Germany"), ("Athens", "Greece"), ("Thessaloniki", "Greece"), ("Mumbai", "India"),
    ("Delhi", "India"), ("Bangalore", "India"), ("Hyderabad", "India"), ("Dublin", "Ireland"), ("Cork", "Ireland"),
    ("Rome", "Italy"), ("Milan", "Italy"), ("Naples", "Italy"), ("Turin", "Italy"), ("Florence", "Italy"),
    ("Tokyo", "Japan"), ("Osaka", "Japan"), ("Kyoto", "Japan"), ("Nagoya", "Japan"), ("Nairobi", "Kenya"),
    ("Mombasa", "Kenya"), ("Mexico City", "Mexico"), ("Guadalajara", "Mexico"), ("Monterrey", "Mexico"),
    ("Casablanca", "Morocco"), ("Marrakesh", "Morocco"), ("Amsterdam", "Netherlands"), ("Rotterdam", "Netherlands"),
    ("Utrecht", "Netherlands"), ("Auckland", "New Zealand"), ("Wellington", "New Zealand"),
    ("Hamilton", "New Zealand"), ("Lagos", "Nigeria"), ("Kano", "Nigeria"), ("Oslo", "Norway"), ("Bergen", "Norway"),
    ("Lima", "Peru"), ("Arequipa", "Peru"), ("Warsaw", "Poland"), ("Krakow", "Poland"), ("Gdansk", "Poland"),
    ("Lisbon", "Portugal"), ("Porto", "Portugal"), ("Cape Town", "South Africa"), ("Johannesburg", "South Africa"),
    ("Durban", "South Africa"), ("Seoul", "South Korea"), ("Busan", "South Korea"), ("Madrid", "Spain"),
    ("Barcelona", "Spain"), ("Valencia", "Spain"), ("Seville", "Spain"), ("Cordoba", "Spain"),
    ("Santiago", "Spain"), ("Stockholm", "Sweden"), ("Gothenburg", "Sweden"), ("Zurich", "Switzerland"),
    ("Geneva", "Switzerland"), ("Basel", "Switzerland"), ("Bangkok", "Thailand"), ("Chiang Mai", "Thailand"),
    ("Istanbul", "Turkey"), ("Izmir", "Turkey"), ("London", "United Kingdom"), ("Manchester", "United Kingdom"),
    ("Birmingham", "United Kingdom"), ("Glasgow", "United Kingdom"), ("Perth", "United Kingdom"),
    ("Cambridge", "United Kingdom"), ("New York", "United States"), ("Los Angeles", "United States"),
    ("Chicago", "United States"), ("Houston", "United States"), ("Boston", "United States"),
    ("Seattle", "United States"), ("Denver", "United States"), ("Paris", "United States"),
    ("Birmingham", "United States"), ("Cambridge", "United States"), ("Alexandria", "United States"),
    ("Hamilton", "United States"), ("Ho Chi Minh City", "Vietnam"), ("Hanoi", "Vietnam"), ("Da Nang", "Vietnam"),
)

TIMEZONES = {
    "Europe": ("Europe/Berlin", "Europe/London", "Europe/Paris", "Europe/Madrid"),
    "Asia": ("Asia/Tokyo", "Asia/Shanghai", "Asia/Kolkata", "Asia/Bangkok"),
    "Africa": ("Africa/Cairo", "Africa/Lagos", "Africa/Nairobi", "Africa/Johannesburg"),
    "North America": ("America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles"),
    "South America": ("America/Sao_Paulo", "America/Bogota", "America/Lima", "America/Santiago"),
    "Oceania": ("Australia/Sydney", "Australia/Perth", "Pacific/Auckland"),
}

FIRST_NAMES = (
    "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William", "Elizabeth", "David",
    "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Daniel", "Nancy",
    "Matthew", "Lisa", "Anthony", "Margaret", "Mark", "Sandra", "Paul", "Ashley", "Steven", "Emily", "Andrew",
    "Donna", "Joshua", "Michelle", "Kenneth", "Carol", "Kevin", "Amanda", "Brian", "Melissa", "George", "Deborah",
    "Lukas", "Sofia", "Mateo", "Lucia", "Hugo", "Chloe", "Liam", "Emma", "Noah", "Olivia", "Elias", "Mia", "Aarav",
    "Priya", "Hiroshi", "Yuki", "Chen", "Mei", "Kwame", "Amara", "Omar", "Fatima", "Ivan", "Olga", "Pierre",
    "Camille", "Giulia", "Marco", "Ingrid", "Lars", "Sven", "Astrid", "Diego", "Valentina", "Rafael", "Ana",
)
LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
    "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee",
    "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young",
    "Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker",
    "Mueller", "Schmidt", "Schneider", "Fischer", "Weber", "Dubois", "Laurent", "Rossi", "Russo", "Ferrari",
    "Kowalski", "Nowak", "Novak", "Jensen", "Hansen", "Larsen", "Johansson", "Virtanen", "Tanaka", "Suzuki",
    "Sato", "Kim", "Park", "Wang", "Li", "Zhang", "Patel", "Sharma", "Singh", "Okafor", "Mensah", "Haddad",
    "Silva", "Santos", "Oliveira", "Costa", "Petrov", "Ivanova", "O'Brien", "MacDonald", "van Dijk", "de Vries",
)

COMPANY_STEMS = (
    "Northwind", "Blue Harbor", "Silverline", "Redwood", "Ironbridge", "Summit Peak", "Golden Gate", "Maple Leaf",
    "Crescent", "Evergreen", "Starlight", "Pinecrest", "Riverside", "Oakmont", "Brightwater", "Stonefield",
    "Westbrook", "Eastgate", "Highland", "Lakeshore", "Sunrise", "Bluebird", "Copperfield", "Falcon Ridge",
    "Granite", "Horizon", "Keystone", "Lionheart", "Meridian", "Nova", "Orion", "Pioneer", "Quantum", "Sterling",
    "Trident", "Unity", "Vanguard", "Windmill", "Yellowstone", "Zenith", "Atlas", "Beacon", "Cobalt", "Delta Bay",
    "Emerald", "Frontier", "Glacier", "Harbor Light", "Ivory Coast", "Juniper", "Kingsley", "Lighthouse",
)
COMPANY_CORES = (
    "Technologies", "Logistics", "Foods", "Pharmaceuticals", "Manufacturing", "Energy", "Systems", "Insurance",
    "Construction", "Laboratories", "Textiles", "Chemicals", "Software", "Motors", "Airlines", "Shipping",
    "Consulting", "Media", "Telecommunications", "Brothers", "Industries", "Electronics", "Biosciences", "Capital",
)
COMPANY_LEGAL = ("Inc.", "Ltd.", "Corporation", "Company", "Holdings", "International", "Group", "LLC", "GmbH", "S.A.")

INDUSTRIES = (
    "Software", "Retail", "Logistics", "Healthcare", "Energy", "Banking", "Insurance", "Automotive", "Telecom",
    "Food & Beverage", "Pharmaceuticals", "Construction", "Media", "Aerospace", "Chemicals", "Textiles",
)

PRODUCT_ADJECTIVES = ("Classic", "Deluxe", "Compact", "Ultra", "Eco", "Smart", "Pro", "Mini", "Heavy-Duty", "Travel",
                      "Wireless", "Ergonomic", "Premium", "Foldable", "Vintage")
PRODUCT_MATERIALS = ("Steel", "Bamboo", "Leather", "Cotton", "Ceramic", "Glass", "Aluminium", "Oak", "Wool", "Carbon")
#: product noun -> category
PRODUCT_NOUNS = {
    "Water Bottle": "Kitchen", "Kettle": "Kitchen", "Frying Pan": "Kitchen", "Coffee Grinder": "Kitchen",
    "Backpack": "Outdoor", "Tent": "Outdoor", "Hiking Pole": "Outdoor", "Sleeping Bag": "Outdoor",
    "Desk Lamp": "Office", "Office Chair": "Office", "Notebook": "Office", "Monitor Stand": "Office",
    "Headphones": "Electronics", "Speaker": "Electronics", "Keyboard": "Electronics", "Charger": "Electronics",
    "Jacket": "Apparel", "Scarf": "Apparel", "Sneakers": "Apparel", "Gloves": "Apparel",
}
COLORS = ("black", "white", "red", "navy", "green", "grey", "beige", "orange", "teal", "burgundy")

DEPARTMENTS = ("Finance", "Human Resources", "Engineering", "Sales", "Marketing", "Operations", "Legal",
               "Customer Support", "Research", "Procurement")
JOB_TITLES = ("Analyst", "Senior Analyst", "Manager", "Engineer", "Senior Engineer", "Director", "Coordinator",
              "Specialist", "Associate", "Team Lead", "Consultant", "Administrator")
LOYALTY_TIERS = ("Bronze", "Silver", "Gold", "Platinum")
EMAIL_DOMAINS = ("example.com", "mail.example.org", "inbox.example.net", "post.example.com")

TEAM_MASCOTS = ("Falcons", "Tigers", "Wolves", "Bears", "Eagles", "Sharks", "Lions", "Hawks", "Rangers", "Royals",
                "Pirates", "Comets", "Titans", "Storm", "Thunder", "Raptors", "Vikings", "Stallions", "Dragons",
                "Panthers", "Mariners", "Rockets", "Knights", "Warriors")
LEAGUES = ("Premier League", "National League", "Continental Cup", "Metro League", "Coastal Conference",
           "Northern Division", "Southern Division")
POSITIONS = ("Goalkeeper", "Defender", "Midfielder", "Forward", "Winger", "Striker")
STADIUM_WORDS = ("Arena", "Stadium", "Park", "Field", "Dome", "Ground")

TITLE_ADJECTIVES = ("Silent", "Broken", "Golden", "Last", "Hidden", "Crimson", "Endless", "Forgotten", "Wild",
                    "Distant", "Electric", "Midnight", "Frozen", "Burning", "Secret", "Lonely", "Scarlet", "Iron")
TITLE_NOUNS = ("Harbor", "Kingdom", "River", "Garden", "Empire", "Horizon", "Mirror", "Storm", "Road", "Island",
               "Promise", "Shadow", "Winter", "Summer", "Voyage", "Letter", "Orchard", "Frontier", "Station", "Tide")
MOVIE_GENRES = ("Drama", "Comedy", "Thriller", "Science Fiction", "Documentary", "Animation", "Horror", "Romance",
                "Action", "Western")
BOOK_GENRES = ("Literary Fiction", "Mystery", "Biography", "History", "Fantasy", "Poetry", "Self-Help",
               "Travel Writing", "Young Adult", "Popular Science")
MUSIC_GENRES = ("Rock", "Jazz", "Pop", "Electronic", "Folk", "Hip Hop", "Classical", "Blues", "Soul", "Metal")
PUBLISHERS = ("Harbor House", "Northlight Press", "Greenleaf Books", "Blue Quill", "Meridian Publishing",
              "Old Mill Editions", "Lantern Press", "Saltwater Books")
RECORD_LABELS = ("Echo Records", "Blue Note Sound", "Midnight Tapes", "Northern Lights Music", "Vinyl Republic",
                 "Sunset Audio")

AIRLINE_WORDS = ("Pacific", "Atlantic", "Nordic", "Alpine", "Coastal", "Sahara", "Andean", "Baltic", "Aegean",
                 "Sunrise", "Polar", "Emerald", "Meridian", "Cascade")
AIRPORT_WORDS = ("International Airport", "Airport", "Regional Airport", "International Airport")
HOSPITAL_SAINTS = ("Mary", "Joseph", "Luke", "Anne", "Vincent", "Francis", "Catherine", "Thomas", "Elizabeth")
HOSPITAL_KINDS = ("General Hospital", "Medical Center", "Children's Hospital", "University Hospital",
                  "Memorial Hospital", "Community Hospital")
HOSPITAL_TYPES = ("public", "private", "teaching", "non-profit")
CUISINES = ("Italian", "Japanese", "Mexican", "Indian", "French", "Thai", "Lebanese", "Ethiopian", "Korean",
            "Peruvian", "Greek", "Vietnamese")
RESTAURANT_NOUNS = ("Table", "Kitchen", "Spoon", "Olive", "Lantern", "Garden", "Oven", "Bistro", "Corner", "Pantry")
PRICE_RANGES = ("$", "$$", "$$$", "$$$$")
REGIONS = ("EMEA", "APAC", "North America", "LATAM")
EXPENSE_CATEGORIES = ("Travel", "Meals", "Training", "Software", "Equipment", "Conference")
RESEARCH_FIELDS = ("Physics", "Biology", "Computer Science", "Economics", "Medicine", "Chemistry", "Linguistics")
GROUND_HANDLERS = ("Swissport", "Menzies", "dnata", "WFS", "Aviapartner")

#: Word -> abbreviations seen in real registers; the semantic-join variations draw from these.
ABBREVIATIONS = {
    "International": ("Intl.", "Int'l", "Intl"), "Corporation": ("Corp.", "Corp"), "Company": ("Co.", "Co"),
    "Incorporated": ("Inc.",), "Limited": ("Ltd.",), "Technologies": ("Tech.", "Technol."),
    "Manufacturing": ("Mfg.",), "Laboratories": ("Labs", "Lab."), "Brothers": ("Bros.",), "Holdings": ("Hldgs.",),
    "Industries": ("Inds.", "Ind."), "Pharmaceuticals": ("Pharma", "Pharm."), "Telecommunications": ("Telecom",),
    "Electronics": ("Elec.",), "Systems": ("Sys.",), "Insurance": ("Ins.",), "Construction": ("Constr.",),
    "Logistics": ("Log.",), "University": ("Univ.", "U."), "Institute": ("Inst.",), "Technology": ("Tech.",),
    "Airport": ("Arpt", "Apt."), "Hospital": ("Hosp.",), "General": ("Gen.",), "Medical": ("Med.",),
    "Center": ("Ctr.",), "Saint": ("St.",), "Memorial": ("Mem.",), "Community": ("Comm.",),
    "Regional": ("Reg.",), "State": ("St.",), "and": ("&",),
}

#: Canonical attribute -> header spellings seen in the wild (the first one is the canonical header).
HEADER_SYNONYMS = {
    "company": ("company", "Company Name", "firm", "organisation", "employer", "business name"),
    "industry": ("industry", "sector", "Industry Sector", "line of business"),
    "city": ("city", "City Name", "town", "municipality", "locality"),
    "country": ("country", "Country Name", "nation", "country/region", "state"),
    "founded_year": ("founded", "year founded", "established", "founding year", "est."),
    "employees": ("employees", "headcount", "staff count", "number of employees", "workforce"),
    "ceo": ("ceo", "chief executive", "CEO Name", "managing director"),
    "year": ("year", "Year", "reference year", "census year", "yr"),
    "population": ("population", "inhabitants", "pop.", "residents", "population total"),
    "area_km2": ("area_km2", "area (km²)", "surface area", "land area km2"),
    "elevation_m": ("elevation_m", "elevation (m)", "altitude", "height above sea level"),
    "timezone": ("timezone", "time zone", "tz", "iana tz"),
    "iso_code": ("iso_code", "ISO 3166", "country code", "iso2"),
    "capital": ("capital", "capital city", "seat of government"),
    "continent": ("continent", "region", "world region"),
    "currency": ("currency", "currency code", "ccy"),
    "gdp_busd": ("gdp_busd", "GDP (bn USD)", "gross domestic product", "gdp billions"),
    "product": ("product", "Product Name", "item", "article", "item description"),
    "category": ("category", "product category", "department", "product group"),
    "brand": ("brand", "manufacturer", "make", "vendor"),
    "price": ("price", "unit price", "list price", "price (usd)", "retail price"),
    "weight_kg": ("weight_kg", "weight (kg)", "mass", "shipping weight"),
    "color": ("color", "colour", "finish", "shade"),
    "sku": ("sku", "SKU code", "article number", "item no"),
    "first_name": ("first_name", "First Name", "given name", "forename"),
    "last_name": ("last_name", "Last Name", "surname", "family name"),
    "department": ("department", "dept", "division", "business unit"),
    "job_title": ("job_title", "Job Title", "position", "role", "designation"),
    "hire_date": ("hire_date", "date hired", "start date", "joined on"),
    "salary": ("salary", "annual salary", "base pay", "compensation"),
    "customer_id": ("customer_id", "Customer ID", "client number", "account no"),
    "full_name": ("full_name", "Name", "customer name", "client"),
    "email": ("email", "e-mail", "email address", "contact email"),
    "birth_year": ("birth_year", "year of birth", "born", "YOB"),
    "loyalty_tier": ("loyalty_tier", "loyalty level", "membership tier", "status level"),
    "team": ("team", "Team Name", "club", "franchise", "side"),
    "league": ("league", "competition", "division", "conference"),
    "stadium": ("stadium", "home ground", "venue", "arena"),
    "capacity": ("capacity", "seats", "seating capacity", "max attendance"),
    "head_coach": ("head_coach", "coach", "manager", "head coach name"),
    "player": ("player", "Player Name", "athlete", "name of player"),
    "position": ("position", "pos", "playing position", "role on field"),
    "age": ("age", "player age", "age (years)"),
    "height_cm": ("height_cm", "height (cm)", "height", "stature"),
    "goals": ("goals", "goals scored", "gls", "total goals"),
    "title": ("title", "Title", "name", "work title"),
    "release_year": ("release_year", "year", "released", "release date (year)"),
    "director": ("director", "directed by", "film director"),
    "genre": ("genre", "Genre", "category", "style"),
    "runtime_min": ("runtime_min", "runtime (min)", "length", "duration minutes"),
    "rating": ("rating", "score", "avg rating", "stars"),
    "box_office_musd": ("box_office_musd", "box office ($m)", "gross", "worldwide gross musd"),
    "author": ("author", "written by", "writer", "Author Name"),
    "publisher": ("publisher", "imprint", "publishing house"),
    "pages": ("pages", "page count", "number of pages", "pp."),
    "isbn": ("isbn", "ISBN-13", "isbn13", "book number"),
    "station": ("station", "Station Name", "weather station", "site"),
    "date": ("date", "Date", "observation date", "day", "measured on"),
    "temp_max_c": ("temp_max_c", "max temp (°C)", "tmax", "high temperature"),
    "temp_min_c": ("temp_min_c", "min temp (°C)", "tmin", "low temperature"),
    "precipitation_mm": ("precipitation_mm", "precip (mm)", "rainfall", "prcp"),
    "humidity_pct": ("humidity_pct", "humidity (%)", "relative humidity", "rh"),
    "wind_kmh": ("wind_kmh", "wind speed (km/h)", "wind", "wspd"),
    "airline": ("airline", "carrier", "Airline Name", "operating carrier"),
    "flight_number": ("flight_number", "flight no", "flight", "flt"),
    "origin": ("origin", "from", "departure airport", "orig"),
    "destination": ("destination", "to", "arrival airport", "dest"),
    "departure_time": ("departure_time", "sched dep", "std", "scheduled departure"),
    "delay_min": ("delay_min", "delay (min)", "minutes late", "arr delay"),
    "airport": ("airport", "Airport Name", "aerodrome", "facility"),
    "iata": ("iata", "IATA code", "airport code", "iata_code"),
    "runways": ("runways", "number of runways", "rwy count"),
    "university": ("university", "institution", "University Name", "school"),
    "students": ("students", "enrolment", "student count", "enrollment"),
    "ownership": ("ownership", "type", "funding", "public/private"),
    "hospital": ("hospital", "Hospital Name", "facility name", "provider"),
    "beds": ("beds", "bed count", "licensed beds", "capacity (beds)"),
    "hospital_type": ("hospital_type", "type", "ownership type", "operator"),
    "restaurant": ("restaurant", "Restaurant Name", "venue", "establishment"),
    "cuisine": ("cuisine", "food type", "kitchen", "cuisine style"),
    "price_range": ("price_range", "price level", "cost", "$ range"),
    "order_id": ("order_id", "Order ID", "order number", "order no"),
    "order_date": ("order_date", "date ordered", "order placed", "purchase date"),
    "quantity": ("quantity", "qty", "units", "amount ordered"),
    "region": ("region", "sales region", "territory", "market"),
    "ticker": ("ticker", "symbol", "stock symbol", "ticker symbol"),
    "open": ("open", "opening price", "open px", "Open"),
    "close": ("close", "closing price", "close px", "last"),
    "volume": ("volume", "shares traded", "vol", "trade volume"),
    "artist": ("artist", "performer", "band", "Artist Name"),
    "album": ("album", "album title", "record", "release"),
    "label": ("label", "record label", "imprint label"),
    "tracks": ("tracks", "track count", "number of tracks", "songs"),
}
