"""Control: what turns a desired motion into drive references — C⁴ trajectories (``trajectory``),
SEA/VSA actuator laws (``actuators``), rigid/SEA/VSA feedforward (``feedforward``), the ROS-free
controller core (``controller``), the flatness-based SEA/VSA feedback
linearisation (``flatness``) and the trajectory enrichment of the JTC proxy (``enrich``).
Robots come in as arguments: nothing here imports the facade."""
