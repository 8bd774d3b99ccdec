"""Pure planners: sizing, placement and cost decisions over the resolved platform."""
