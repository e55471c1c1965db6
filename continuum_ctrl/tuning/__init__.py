"""Gains chosen with margins: the closed loop linearized, its margins, a gain search (no ROS)."""
