"""ROS 2 side: message conversion, the node's pipeline, bag replay and the
simulated robot are rclpy-free (tested with rosbags' real ROS 2 message
classes); node.py and sim_node.py are the thin rclpy glue."""
