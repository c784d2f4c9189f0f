"""Planners: how an LlmAgent plans before acting (ADK's `google.adk.planners`)."""

from app.planners.base_planner import BasePlanner
from app.planners.built_in_planner import BuiltInPlanner
from app.planners.plan_re_act_planner import PlanReActPlanner

__all__ = ["BasePlanner", "BuiltInPlanner", "PlanReActPlanner"]
