"""
The PMAs between the law and the arm (no ROS): the pressure map and the valve model.

- `pressure_map`: generalized forces to PMA pressures and back (`ActuationMap`);
- `valves`: the applied pressure behind a commanded one (`Actuator`), for the simulator's
  plant and the controller's valve compensation alike.
"""
