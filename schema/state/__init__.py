"""GraphQL types of OpenRL's own state (Redis): Session, Model, Step, Op, Worker,
Placement, and the root fields that look them up.
"""
