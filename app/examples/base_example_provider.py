"""BaseExampleProvider: examples chosen per query (e.g. by similarity) instead of a fixed list."""

from abc import ABC, abstractmethod

from app.examples.example import Example


class BaseExampleProvider(ABC):
    """Supplies the examples for a user query."""

    @abstractmethod
    def get_examples(self, query: str) -> list[Example]:
        """The examples to show the model for `query`."""
