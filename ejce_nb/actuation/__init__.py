"""The forces that drive a mechanism: actuators, tendons, applied forces, gravity compensation."""
