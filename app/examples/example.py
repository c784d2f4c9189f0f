"""Example: one user input and the model turns that should follow it."""

from google.genai import types
from pydantic import BaseModel


class Example(BaseModel):
    """A few-shot example: `input` from the user, `output` the turns that answer it."""

    input: types.Content
    output: list[types.Content]
