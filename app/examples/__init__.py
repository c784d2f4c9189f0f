"""Few-shot examples for agents (ADK's `google.adk.examples`)."""

from app.examples.base_example_provider import BaseExampleProvider
from app.examples.example import Example

__all__ = ["BaseExampleProvider", "Example"]
