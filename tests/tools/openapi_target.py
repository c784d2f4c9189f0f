"""A small FastAPI service for the OpenAPIToolset tests, run by uvicorn in its own process.

`create_app` names `TARGET_URL` as its server in its OpenAPI document and records every request
it gets (method, raw path, query, headers, body); `GET /_received` lists them and
`DELETE /_received` forgets them, both left out of the document.
"""

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Path, Query, Request, Security
from fastapi.responses import PlainTextResponse, StreamingResponse
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_KEY = "k-123"
BIG_BYTES = 3 * 1024 * 1024 // 2  # 1.5 MiB: over the default 1 MiB limit


class PetIn(BaseModel):
    """A pet to create."""

    name: str = Field(description="What the pet is called.")
    species: str = Field(default="cat", description="cat, dog, ...")
    tags: list[str] = Field(default_factory=list)


class Pet(PetIn):
    """A stored pet."""

    id: int


class Recorder:
    """ASGI middleware keeping what each HTTP request carried."""

    def __init__(self, app: ASGIApp, received: list[dict[str, Any]]) -> None:
        self.app = app
        self.received = received

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/_received":
            await self.app(scope, receive, send)
            return
        entry: dict[str, Any] = {
            "method": scope["method"],
            "raw_path": scope["raw_path"].decode(),
            "query": scope["query_string"].decode(),
            "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
            "body": "",
        }
        self.received.append(entry)

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                entry["body"] += message.get("body", b"").decode()
            return message

        await self.app(scope, recording_receive, send)


def create_app() -> FastAPI:
    """The target service (uvicorn --factory)."""
    app = FastAPI(title="pets", version="1", servers=[{"url": os.environ["TARGET_URL"]}])
    received: list[dict[str, Any]] = []
    pets: dict[int, Pet] = {1: Pet(id=1, name="Rex", species="dog")}
    api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The service's key.")

    @app.get(
        "/pets/{pet_id}",
        operation_id="getPet",
        summary="Get a pet",
        description="Returns the pet with this id.",
    )
    def get_pet(pet_id: Annotated[int, Path(description="The pet's id.")]) -> Pet:
        if pet_id not in pets:
            raise HTTPException(status_code=404, detail=f"no pet {pet_id}")
        return pets[pet_id]

    @app.get("/pets", operation_id="listPets", summary="List the pets")
    def list_pets(
        species: Annotated[str | None, Query(description="Only this species.")] = None,
        limit: int = 10,
    ) -> list[Pet]:
        return [p for p in pets.values() if species in (None, p.species)][:limit]

    @app.post("/pets", operation_id="createPet", summary="Create a pet", status_code=201)
    def create_pet(pet: PetIn) -> Pet:
        created = Pet(id=max(pets) + 1, **pet.model_dump())
        pets[created.id] = created
        return created

    @app.get("/secret", operation_id="readSecret", summary="Read the secret")
    def read_secret(key: Annotated[str | None, Security(api_key)]) -> dict[str, str]:
        if key != API_KEY:
            raise HTTPException(status_code=401, detail="a valid X-API-Key is required")
        return {"secret": "swordfish"}

    @app.get("/notes/{title}", operation_id="getNote", summary="Echo a note's title")
    def get_note(title: str) -> dict[str, str]:
        return {"title": title}

    @app.get("/big", operation_id="getBig", summary="A large text")
    def get_big(stream: bool = False) -> Any:
        if not stream:
            return PlainTextResponse("x" * BIG_BYTES)

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(BIG_BYTES // 65536):
                yield b"y" * 65536

        return StreamingResponse(chunks(), media_type="text/plain")

    @app.get("/slow", operation_id="getSlow", summary="Answers after two seconds")
    async def get_slow() -> dict[str, bool]:
        await asyncio.sleep(2)
        return {"slow": True}

    # For the hand-written document's operation: echoes the JSON it gets.
    @app.post("/trees", include_in_schema=False)
    async def plant_tree(request: Request) -> Any:
        return await request.json()

    @app.get("/_received", include_in_schema=False)
    def list_received() -> list[dict[str, Any]]:
        return received

    @app.delete("/_received", include_in_schema=False)
    def forget_received() -> None:
        received.clear()

    app.add_middleware(Recorder, received=received)
    return app
