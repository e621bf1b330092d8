"""The transition model: a small trained model of how the user's state moves after an agent turn.

It reads the agent's last turn, the user's own turn before it and the previous state, and
predicts the next emotion and B/D/I scores (:mod:`.features`, :mod:`.model`); it is fitted on the
human labels of a samples directory's train split (:mod:`.fit`) and plays the arena's simulated
user, or is carded by ``cogwm validate --simulator transition:FILE`` (:mod:`.simulator`).
"""
