"""
Identification from recorded runs (no ROS): readers, signals, the regression, the fit, reports.

    runs = read_runs(paths, setup)                   # rosbag2 MCAP bags or the demo's CSV
    result = identify(runs, setup, options)          # least squares, dead zone, actuator lag
"""
