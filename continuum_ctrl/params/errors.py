"""ConfigError: a bad parameter or parameter file, its message naming the key."""


class ConfigError(ValueError):
    """A bad parameter or parameter file; the message names the offending key."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"parameter '{key}': {problem}" if key else problem)
