"""No-op stand-in for tqdm (progress bars only), so python3-tqdm is not required."""


class tqdm:  # noqa: N801 - same name as the real class
    def __init__(self, iterable=None, *_, **__):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable or [])

    def update(self, *_):
        pass

    def set_description(self, *_):
        pass

    def reset(self, *_, **__):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False
