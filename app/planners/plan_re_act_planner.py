"""PlanReActPlanner: plan, act and reason in tagged text, for models without built-in thinking.

The instruction asks the model to write its plan under /*PLANNING*/, tool use under /*ACTION*/,
its reasoning under /*REASONING*/ and the answer under /*FINAL_ANSWER*/. The answer is then
split as ADK splits it: text before the last final-answer tag, and text parts that start with a
planning tag, become thoughts (`thought=True`, the tag stripped); the answer stays plain text;
only the first group of function calls is kept. The wording of the instruction follows ADK's,
so a model prompted through either behaves the same.
"""

from google.genai import types

from app.contexts.callback import CallbackContext
from app.contexts.readonly import ReadonlyContext
from app.models.llm import LlmRequest
from app.planners.base_planner import BasePlanner

PLANNING_TAG = "/*PLANNING*/"
REPLANNING_TAG = "/*REPLANNING*/"
REASONING_TAG = "/*REASONING*/"
ACTION_TAG = "/*ACTION*/"
FINAL_ANSWER_TAG = "/*FINAL_ANSWER*/"

_THOUGHT_TAGS = (PLANNING_TAG, REPLANNING_TAG, REASONING_TAG, ACTION_TAG)

_INSTRUCTION = f"""\
When answering the question, try to leverage the available tools to gather the information \
instead of your memorized knowledge.

Follow this process when answering the question: (1) first come up with a plan in natural \
language text format; (2) Then use tools to execute the plan and provide reasoning between tool \
code snippets to make a summary of current state and next step. Tool code snippets and reasoning \
should be interleaved with each other. (3) In the end, return one final answer.

Follow this format when answering the question: (1) The planning part should be under \
{PLANNING_TAG}. (2) The tool code snippets should be under {ACTION_TAG}, and the reasoning parts \
should be under {REASONING_TAG}. (3) The final answer part should be under {FINAL_ANSWER_TAG}.

Below are the requirements for the planning:
The plan is made to answer the user query if following the plan. The plan is coherent and covers \
all aspects of information from user query, and only involves the tools that are accessible by \
the agent. The plan contains the decomposed steps as a numbered list where each step should use \
one or multiple available tools. By reading the plan, you can intuitively know which tools to \
trigger or what actions to take.
If the initial plan cannot be successfully executed, you should learn from previous execution \
results and revise your plan. The revised plan should be under {REPLANNING_TAG}. Then use tools \
to follow the new plan.

Below are the requirements for the reasoning:
The reasoning makes a summary of the current trajectory based on the user query and tool \
outputs. Based on the tool outputs and plan, the reasoning also comes up with instructions to the \
next steps, making the trajectory closer to the final answer.

Below are the requirements for the final answer:
The final answer should be precise and follow query formatting requirements. Some queries may \
not be answerable with the available tools and information. In those cases, inform the user why \
you cannot process their query and ask for more information.

Below are the requirements for the tool code:

**Custom Tools:** The available tools are described in the context and can be directly used.
- Code must be valid self-contained Python snippets with no imports and no references to tools \
or Python libraries that are not in the context.
- You cannot use any parameters or fields that are not explicitly defined in the APIs in the \
context.
- The code snippets should be readable, efficient, and directly relevant to the user query and \
reasoning steps.
- When using the tools, you should use the library name together with the function name, e.g., \
vertex_search.search().
- If Python libraries are not provided in the context, NEVER write your own code other than the \
function calls using the provided tools.

VERY IMPORTANT instruction that you MUST follow in addition to the above instructions:

You should ask for clarification if you need more information to answer the question.
You should prefer using the information available in the context instead of repeated tool use.
"""


class PlanReActPlanner(BasePlanner):
    """Constrains the model to write a plan before any action (no thinking support needed)."""

    def build_planning_instruction(
        self, readonly_context: ReadonlyContext, llm_request: LlmRequest
    ) -> str:
        """The Plan-ReAct format instruction."""
        del readonly_context, llm_request
        return _INSTRUCTION

    def process_planning_response(
        self, callback_context: CallbackContext, response_parts: list[types.Part]
    ) -> list[types.Part] | None:
        """Thoughts marked, the final answer plain, calls after the first group dropped."""
        del callback_context
        if not response_parts:
            return None
        kept: list[types.Part] = []
        for index, part in enumerate(response_parts):
            call = part.function_call
            if call is not None:
                if not call.name:  # a call without a name cannot be run
                    continue
                kept.append(part)
                for following in response_parts[index + 1 :]:
                    if following.function_call is None:
                        break
                    kept.append(following)
                return kept
            kept.extend(_split_text_part(part))
        return kept


def _split_text_part(part: types.Part) -> list[types.Part]:
    text = part.text or ""
    if FINAL_ANSWER_TAG in text:
        cut = text.rindex(FINAL_ANSWER_TAG) + len(FINAL_ANSWER_TAG)
        reasoning, answer = text[:cut], text[cut:]
        split: list[types.Part] = []
        if reasoning:
            split.append(_thought(reasoning))
        if answer:
            split.append(types.Part(text=answer))
        return split
    if text.startswith(_THOUGHT_TAGS):
        return [_thought(text)]
    return [part]


def _thought(text: str) -> types.Part:
    for tag in _THOUGHT_TAGS:
        if text.startswith(tag):
            text = text[len(tag) :]
            break
    return types.Part(text=text, thought=True)
