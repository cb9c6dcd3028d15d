"""The collaboration structure's mechanics: the memory build, approval gates, living memory updates."""
