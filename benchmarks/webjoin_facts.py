"""Public-domain facts the web-table join benchmark (``benchmarks/webjoin.py``) writes its lake from, typed in.

US presidents (term dates as inaugurations and successions fall), vice presidents (years in office), the presidential
elections 1789-2020 (winner first, then the runner-up and notable third-party candidates), the parties of those
candidates with approximate founding years, and the fifty states with capitals, capitals' approximate coordinates,
admission years and census regions.  Historical facts: no copyright, nothing downloaded.
"""
from __future__ import annotations

# name | party | born | died (empty: living) | took office | left office
PRESIDENTS = """\
George Washington|Unaffiliated|1732|1799|April 30 1789|March 4 1797
John Adams|Federalist|1735|1826|March 4 1797|March 4 1801
Thomas Jefferson|Democratic-Republican|1743|1826|March 4 1801|March 4 1809
James Madison|Democratic-Republican|1751|1836|March 4 1809|March 4 1817
James Monroe|Democratic-Republican|1758|1831|March 4 1817|March 4 1825
John Quincy Adams|National Republican|1767|1848|March 4 1825|March 4 1829
Andrew Jackson|Democratic|1767|1845|March 4 1829|March 4 1837
Martin Van Buren|Democratic|1782|1862|March 4 1837|March 4 1841
William Henry Harrison|Whig|1773|1841|March 4 1841|April 4 1841
John Tyler|Whig|1790|1862|April 4 1841|March 4 1845
James K. Polk|Democratic|1795|1849|March 4 1845|March 4 1849
Zachary Taylor|Whig|1784|1850|March 4 1849|July 9 1850
Millard Fillmore|Whig|1800|1874|July 9 1850|March 4 1853
Franklin Pierce|Democratic|1804|1869|March 4 1853|March 4 1857
James Buchanan|Democratic|1791|1868|March 4 1857|March 4 1861
Abraham Lincoln|Republican|1809|1865|March 4 1861|April 15 1865
Andrew Johnson|National Union|1808|1875|April 15 1865|March 4 1869
Ulysses S. Grant|Republican|1822|1885|March 4 1869|March 4 1877
Rutherford B. Hayes|Republican|1822|1893|March 4 1877|March 4 1881
James A. Garfield|Republican|1831|1881|March 4 1881|September 19 1881
Chester A. Arthur|Republican|1829|1886|September 19 1881|March 4 1885
Grover Cleveland|Democratic|1837|1908|March 4 1885|March 4 1889
Benjamin Harrison|Republican|1833|1901|March 4 1889|March 4 1893
Grover Cleveland|Democratic|1837|1908|March 4 1893|March 4 1897
William McKinley|Republican|1843|1901|March 4 1897|September 14 1901
Theodore Roosevelt|Republican|1858|1919|September 14 1901|March 4 1909
William Howard Taft|Republican|1857|1930|March 4 1909|March 4 1913
Woodrow Wilson|Democratic|1856|1924|March 4 1913|March 4 1921
Warren G. Harding|Republican|1865|1923|March 4 1921|August 2 1923
Calvin Coolidge|Republican|1872|1933|August 2 1923|March 4 1929
Herbert Hoover|Republican|1874|1964|March 4 1929|March 4 1933
Franklin D. Roosevelt|Democratic|1882|1945|March 4 1933|April 12 1945
Harry S. Truman|Democratic|1884|1972|April 12 1945|January 20 1953
Dwight D. Eisenhower|Republican|1890|1969|January 20 1953|January 20 1961
John F. Kennedy|Democratic|1917|1963|January 20 1961|November 22 1963
Lyndon B. Johnson|Democratic|1908|1973|November 22 1963|January 20 1969
Richard Nixon|Republican|1913|1994|January 20 1969|August 9 1974
Gerald Ford|Republican|1913|2006|August 9 1974|January 20 1977
Jimmy Carter|Democratic|1924|2024|January 20 1977|January 20 1981
Ronald Reagan|Republican|1911|2004|January 20 1981|January 20 1989
George H. W. Bush|Republican|1924|2018|January 20 1989|January 20 1993
Bill Clinton|Democratic|1946||January 20 1993|January 20 2001
George W. Bush|Republican|1946||January 20 2001|January 20 2009
Barack Obama|Democratic|1961||January 20 2009|January 20 2017
Donald Trump|Republican|1946||January 20 2017|January 20 2021
Joe Biden|Democratic|1942||January 20 2021|January 20 2025
"""

# name | party | first year | last year
VICE_PRESIDENTS = """\
John Adams|Federalist|1789|1797
Thomas Jefferson|Democratic-Republican|1797|1801
Aaron Burr|Democratic-Republican|1801|1805
George Clinton|Democratic-Republican|1805|1812
Elbridge Gerry|Democratic-Republican|1813|1814
Daniel D. Tompkins|Democratic-Republican|1817|1825
John C. Calhoun|Democratic-Republican|1825|1832
Martin Van Buren|Democratic|1833|1837
Richard Mentor Johnson|Democratic|1837|1841
John Tyler|Whig|1841|1841
George M. Dallas|Democratic|1845|1849
Millard Fillmore|Whig|1849|1850
William R. King|Democratic|1853|1853
John C. Breckinridge|Democratic|1857|1861
Hannibal Hamlin|Republican|1861|1865
Andrew Johnson|National Union|1865|1865
Schuyler Colfax|Republican|1869|1873
Henry Wilson|Republican|1873|1875
William A. Wheeler|Republican|1877|1881
Chester A. Arthur|Republican|1881|1881
Thomas A. Hendricks|Democratic|1885|1885
Levi P. Morton|Republican|1889|1893
Adlai Stevenson I|Democratic|1893|1897
Garret Hobart|Republican|1897|1899
Theodore Roosevelt|Republican|1901|1901
Charles W. Fairbanks|Republican|1905|1909
James S. Sherman|Republican|1909|1912
Thomas R. Marshall|Democratic|1913|1921
Calvin Coolidge|Republican|1921|1923
Charles G. Dawes|Republican|1925|1929
Charles Curtis|Republican|1929|1933
John Nance Garner|Democratic|1933|1941
Henry A. Wallace|Democratic|1941|1945
Harry S. Truman|Democratic|1945|1945
Alben W. Barkley|Democratic|1949|1953
Richard Nixon|Republican|1953|1961
Lyndon B. Johnson|Democratic|1961|1963
Hubert Humphrey|Democratic|1965|1969
Spiro Agnew|Republican|1969|1973
Gerald Ford|Republican|1973|1974
Nelson Rockefeller|Republican|1974|1977
Walter Mondale|Democratic|1977|1981
George H. W. Bush|Republican|1981|1989
Dan Quayle|Republican|1989|1993
Al Gore|Democratic|1993|2001
Dick Cheney|Republican|2001|2009
Joe Biden|Democratic|2009|2017
Mike Pence|Republican|2017|2021
Kamala Harris|Democratic|2021|2025
"""

# year | winner:party | other candidates:party ...
ELECTIONS = """\
1789|George Washington:Unaffiliated|John Adams:Federalist
1792|George Washington:Unaffiliated|John Adams:Federalist
1796|John Adams:Federalist|Thomas Jefferson:Democratic-Republican
1800|Thomas Jefferson:Democratic-Republican|John Adams:Federalist
1804|Thomas Jefferson:Democratic-Republican|Charles C. Pinckney:Federalist
1808|James Madison:Democratic-Republican|Charles C. Pinckney:Federalist
1812|James Madison:Democratic-Republican|DeWitt Clinton:Federalist
1816|James Monroe:Democratic-Republican|Rufus King:Federalist
1820|James Monroe:Democratic-Republican
1824|John Quincy Adams:Democratic-Republican|Andrew Jackson:Democratic-Republican|\
William H. Crawford:Democratic-Republican|Henry Clay:Democratic-Republican
1828|Andrew Jackson:Democratic|John Quincy Adams:National Republican
1832|Andrew Jackson:Democratic|Henry Clay:National Republican|William Wirt:Anti-Masonic
1836|Martin Van Buren:Democratic|William Henry Harrison:Whig
1840|William Henry Harrison:Whig|Martin Van Buren:Democratic
1844|James K. Polk:Democratic|Henry Clay:Whig|James G. Birney:Liberty
1848|Zachary Taylor:Whig|Lewis Cass:Democratic|Martin Van Buren:Free Soil
1852|Franklin Pierce:Democratic|Winfield Scott:Whig|John P. Hale:Free Soil
1856|James Buchanan:Democratic|John C. Fremont:Republican|Millard Fillmore:American
1860|Abraham Lincoln:Republican|John C. Breckinridge:Southern Democratic|Stephen A. Douglas:Democratic|\
John Bell:Constitutional Union
1864|Abraham Lincoln:National Union|George B. McClellan:Democratic
1868|Ulysses S. Grant:Republican|Horatio Seymour:Democratic
1872|Ulysses S. Grant:Republican|Horace Greeley:Liberal Republican
1876|Rutherford B. Hayes:Republican|Samuel J. Tilden:Democratic
1880|James A. Garfield:Republican|Winfield Scott Hancock:Democratic|James B. Weaver:Greenback
1884|Grover Cleveland:Democratic|James G. Blaine:Republican
1888|Benjamin Harrison:Republican|Grover Cleveland:Democratic
1892|Grover Cleveland:Democratic|Benjamin Harrison:Republican|James B. Weaver:Populist
1896|William McKinley:Republican|William Jennings Bryan:Democratic
1900|William McKinley:Republican|William Jennings Bryan:Democratic
1904|Theodore Roosevelt:Republican|Alton B. Parker:Democratic|Eugene V. Debs:Socialist
1908|William Howard Taft:Republican|William Jennings Bryan:Democratic
1912|Woodrow Wilson:Democratic|Theodore Roosevelt:Progressive|William Howard Taft:Republican|Eugene V. Debs:Socialist
1916|Woodrow Wilson:Democratic|Charles Evans Hughes:Republican
1920|Warren G. Harding:Republican|James M. Cox:Democratic|Eugene V. Debs:Socialist
1924|Calvin Coolidge:Republican|John W. Davis:Democratic|Robert M. La Follette:Progressive
1928|Herbert Hoover:Republican|Al Smith:Democratic
1932|Franklin D. Roosevelt:Democratic|Herbert Hoover:Republican|Norman Thomas:Socialist
1936|Franklin D. Roosevelt:Democratic|Alf Landon:Republican
1940|Franklin D. Roosevelt:Democratic|Wendell Willkie:Republican
1944|Franklin D. Roosevelt:Democratic|Thomas E. Dewey:Republican
1948|Harry S. Truman:Democratic|Thomas E. Dewey:Republican|Strom Thurmond:States' Rights|Henry A. Wallace:Progressive
1952|Dwight D. Eisenhower:Republican|Adlai Stevenson II:Democratic
1956|Dwight D. Eisenhower:Republican|Adlai Stevenson II:Democratic
1960|John F. Kennedy:Democratic|Richard Nixon:Republican
1964|Lyndon B. Johnson:Democratic|Barry Goldwater:Republican
1968|Richard Nixon:Republican|Hubert Humphrey:Democratic|George Wallace:American Independent
1972|Richard Nixon:Republican|George McGovern:Democratic
1976|Jimmy Carter:Democratic|Gerald Ford:Republican
1980|Ronald Reagan:Republican|Jimmy Carter:Democratic|John B. Anderson:Independent
1984|Ronald Reagan:Republican|Walter Mondale:Democratic
1988|George H. W. Bush:Republican|Michael Dukakis:Democratic
1992|Bill Clinton:Democratic|George H. W. Bush:Republican|Ross Perot:Independent
1996|Bill Clinton:Democratic|Bob Dole:Republican|Ross Perot:Reform
2000|George W. Bush:Republican|Al Gore:Democratic|Ralph Nader:Green
2004|George W. Bush:Republican|John Kerry:Democratic
2008|Barack Obama:Democratic|John McCain:Republican
2012|Barack Obama:Democratic|Mitt Romney:Republican
2016|Donald Trump:Republican|Hillary Clinton:Democratic|Gary Johnson:Libertarian
2020|Joe Biden:Democratic|Donald Trump:Republican|Jo Jorgensen:Libertarian
"""

# party | founded (approximate; empty: not a party)
PARTIES = """\
Unaffiliated|
Federalist|1789
Democratic-Republican|1792
National Republican|1825
Democratic|1828
Anti-Masonic|1828
Whig|1833
Liberty|1840
Free Soil|1848
American|1855
Republican|1854
Southern Democratic|1860
Constitutional Union|1860
National Union|1864
Liberal Republican|1872
Greenback|1874
Populist|1891
Socialist|1901
Progressive|1912
States' Rights|1948
American Independent|1967
Libertarian|1971
Green|1991
Reform|1995
Independent|
"""

# state | abbreviation | capital | capital latitude | capital longitude | admitted | region
STATES = """\
Alabama|AL|Montgomery|32.38|-86.30|1819|South
Alaska|AK|Juneau|58.30|-134.42|1959|West
Arizona|AZ|Phoenix|33.45|-112.07|1912|West
Arkansas|AR|Little Rock|34.75|-92.29|1836|South
California|CA|Sacramento|38.58|-121.49|1850|West
Colorado|CO|Denver|39.74|-104.99|1876|West
Connecticut|CT|Hartford|41.76|-72.68|1788|Northeast
Delaware|DE|Dover|39.16|-75.52|1787|South
Florida|FL|Tallahassee|30.44|-84.28|1845|South
Georgia|GA|Atlanta|33.75|-84.39|1788|South
Hawaii|HI|Honolulu|21.31|-157.86|1959|West
Idaho|ID|Boise|43.62|-116.20|1890|West
Illinois|IL|Springfield|39.80|-89.65|1818|Midwest
Indiana|IN|Indianapolis|39.77|-86.16|1816|Midwest
Iowa|IA|Des Moines|41.59|-93.62|1846|Midwest
Kansas|KS|Topeka|39.05|-95.68|1861|Midwest
Kentucky|KY|Frankfort|38.20|-84.87|1792|South
Louisiana|LA|Baton Rouge|30.45|-91.19|1812|South
Maine|ME|Augusta|44.31|-69.78|1820|Northeast
Maryland|MD|Annapolis|38.98|-76.49|1788|South
Massachusetts|MA|Boston|42.36|-71.06|1788|Northeast
Michigan|MI|Lansing|42.73|-84.56|1837|Midwest
Minnesota|MN|Saint Paul|44.95|-93.09|1858|Midwest
Mississippi|MS|Jackson|32.30|-90.18|1817|South
Missouri|MO|Jefferson City|38.58|-92.17|1821|Midwest
Montana|MT|Helena|46.59|-112.04|1889|West
Nebraska|NE|Lincoln|40.81|-96.70|1867|Midwest
Nevada|NV|Carson City|39.16|-119.77|1864|West
New Hampshire|NH|Concord|43.21|-71.54|1788|Northeast
New Jersey|NJ|Trenton|40.22|-74.76|1787|Northeast
New Mexico|NM|Santa Fe|35.69|-105.94|1912|West
New York|NY|Albany|42.65|-73.76|1788|Northeast
North Carolina|NC|Raleigh|35.78|-78.64|1789|South
North Dakota|ND|Bismarck|46.81|-100.78|1889|Midwest
Ohio|OH|Columbus|39.96|-83.00|1803|Midwest
Oklahoma|OK|Oklahoma City|35.47|-97.52|1907|South
Oregon|OR|Salem|44.94|-123.04|1859|West
Pennsylvania|PA|Harrisburg|40.27|-76.88|1787|Northeast
Rhode Island|RI|Providence|41.82|-71.41|1790|Northeast
South Carolina|SC|Columbia|34.00|-81.03|1788|South
South Dakota|SD|Pierre|44.37|-100.35|1889|Midwest
Tennessee|TN|Nashville|36.16|-86.78|1796|South
Texas|TX|Austin|30.27|-97.74|1845|South
Utah|UT|Salt Lake City|40.76|-111.89|1896|West
Vermont|VT|Montpelier|44.26|-72.58|1791|Northeast
Virginia|VA|Richmond|37.54|-77.44|1788|South
Washington|WA|Olympia|47.04|-122.90|1889|West
West Virginia|WV|Charleston|38.35|-81.63|1863|South
Wisconsin|WI|Madison|43.07|-89.40|1848|Midwest
Wyoming|WY|Cheyenne|41.14|-104.82|1890|West
"""


def rows(text: str) -> list[list[str]]:
    """The ``|``-separated fields of each line of one of the lists above."""
    return [line.split("|") for line in text.splitlines() if line]
