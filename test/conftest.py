"""Test-wide settings: DDS stays on this machine, on a domain of this run's own."""

import os

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', str(5 + os.getpid() % 90))
