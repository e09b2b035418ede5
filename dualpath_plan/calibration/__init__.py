"""Calibration: step-time tables of a hardware profile fitted to kernel measurements (``dualpath-plan calibrate``).

Measurements come as :class:`~dualpath_plan.calibration.measurements.Measurement` rows, from a CSV file a user
writes (``measurements``) or from AIConfigurator's database (``aiconfigurator``); ``fits`` turns them into the
profile's tables with their errors, and ``profile_text`` writes the profile.
"""
