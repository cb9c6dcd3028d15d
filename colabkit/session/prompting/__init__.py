"""What each participant is given before it acts: the observation, its items, the profile that sizes them."""
