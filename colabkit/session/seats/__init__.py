"""Who answers for a participant: its model (one ReAct call) or a person at a desk."""
