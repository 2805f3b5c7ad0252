"""A table of things by unique name: the models, the optimizer recipes, the export formats.

Standard library only and under every package, like :mod:`predcalc.paths` (the runtime-only
install reads the export formats' table).

Example:
    >>> colours = Registry("colour")
    >>> colours.add("red", 1)
    1
    >>> colours.named("blue")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    ValueError: unknown colour 'blue'; registered colours: red
"""


class Registry(dict):
    """Things by a unique name: :meth:`add` refuses a name twice, :meth:`named` lists the names
    there are when asked for an unknown one (sorted where ``sort_names``, else in registration
    order). ``renamed`` maps a former name to the current one, so :meth:`named` still finds a thing
    that stored records or a command line name the old way."""

    def __init__(self, kind: str, sort_names: bool = False, renamed: dict[str, str] | None = None):
        super().__init__()
        self.kind = kind
        self.sort_names = sort_names
        self.renamed = dict(renamed or {})

    def add(self, name: str, item):
        """Register ``item`` under the new ``name``; returns ``item``."""
        if name in self:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self[name] = item
        return item

    def named(self, name: str):
        """The item registered under ``name`` (or under the name it was renamed to)."""
        name = self.renamed.get(name, name)
        if name not in self:
            names = sorted(self) if self.sort_names else self
            raise ValueError(f"unknown {self.kind} {name!r}; registered {self.kind}s: {', '.join(names)}")
        return self[name]
