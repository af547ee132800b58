"""The ground floor: what every floor above uses and that knows nothing of lakes or indexes.

The process's memory pool (:mod:`.allocator`) and query threads (:mod:`.threads`), the value normalisation both joins
and the lake readers share (:mod:`.normalize`), the region names of place cells (:mod:`.regions`) and the XASH hash of
multi-column keys (:mod:`.xash`).  The configuration (:mod:`discovery.config`) is on this floor too; it stays at the
package's root because users import it by that name.
"""
