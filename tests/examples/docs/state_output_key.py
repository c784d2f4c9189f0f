# Source: ADK docs, "State: The Session's Scratchpad" > "How State is Updated" >
#   "1. The Easy Way: output_key", https://google.github.io/adk-docs/sessions/state/
# Changed: the imports (`google.adk` -> `app`), and one doc bug: the last `get_session` call uses
#   APP_NAME / USER_ID, which the snippet never defines (a NameError under ADK too); they are
#   spelled app_name / user_id here. The model name is kept: the test points the Gemini backend
#   at the local Gemini API stub. Top-level `await` as in a notebook cell.
from app.agents import LlmAgent
from app.sessions import InMemorySessionService, Session
from app.runners import Runner
from google.genai.types import Content, Part

# Define agent with output_key
greeting_agent = LlmAgent(
    name="Greeter",
    model="gemini-2.0-flash", # Use a valid model
    instruction="Generate a short, friendly greeting.",
    output_key="last_greeting" # Save response to state['last_greeting']
)

# --- Setup Runner and Session ---
app_name, user_id, session_id = "state_app", "user1", "session1"
session_service = InMemorySessionService()
runner = Runner(
    agent=greeting_agent,
    app_name=app_name,
    session_service=session_service
)
session = await session_service.create_session(app_name=app_name,
                                    user_id=user_id,
                                    session_id=session_id)
print(f"Initial state: {session.state}")

# --- Run the Agent ---
# Runner handles calling append_event, which uses the output_key
# to automatically create the state_delta.
user_message = Content(parts=[Part(text="Hello")])
for event in runner.run(user_id=user_id,
                        session_id=session_id,
                        new_message=user_message):
    if event.is_final_response():
      print(f"Agent responded.") # Response text is also in event.content

# --- Check Updated State ---
updated_session = await session_service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
print(f"State after agent run: {updated_session.state}")
# Expected output might include: {'last_greeting': 'Hello there! How can I help you today?'}
