// A C++ client of robot_linearization, as a controller written with rclcpp would use it:
// it takes one robot_linearization/Linearization from <node>/linearization, asks
// <node>/linearize for the linearization at that message's own point (joint state, base pose
// and twist, contacts, dt), and prints both as one JSON object on stdout:
//   {"topic": {...}, "service": {"success": ..., "message": ..., ...}}
// with every float at 17 significant digits.  Usage: linearization_client <node> [timeout_s]
// Exit status: 0 done, 1 a timeout or a failed call (said on stderr), 2 wrong arguments.

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rclcpp/rclcpp.hpp"
#include "robot_linearization/msg/linearization.hpp"
#include "robot_linearization/srv/linearize.hpp"

using robot_linearization::msg::Linearization;
using robot_linearization::srv::Linearize;

namespace
{

std::string json_string(const std::string & text)
{
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double value)
{
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string numbers(const std::vector<double> & values)
{
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i ? "," : "") + number(values[i]);
  }
  return out + "]";
}

std::string strings(const std::vector<std::string> & values)
{
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i ? "," : "") + json_string(values[i]);
  }
  return out + "]";
}

// The fields a controller reads: the point, the labels and A, B, M⁻¹ (row-major, sizes from the labels).
std::string linearization_json(const Linearization & m)
{
  const auto & p = m.base_pose;
  const auto & t = m.base_twist;
  return "{\"stamp_ns\":" + std::to_string(static_cast<long long>(m.header.stamp.sec) * 1000000000LL +
                                           m.header.stamp.nanosec) +
         ",\"frame_id\":" + json_string(m.header.frame_id) +
         ",\"joint_names\":" + strings(m.joint_names) +
         ",\"joint_positions\":" + numbers(m.joint_positions) +
         ",\"joint_velocities\":" + numbers(m.joint_velocities) +
         ",\"joint_efforts\":" + numbers(m.joint_efforts) +
         ",\"floating_base\":" + (m.floating_base ? "true" : "false") +
         ",\"base_position\":" + numbers({p.position.x, p.position.y, p.position.z}) +
         ",\"base_orientation_xyzw\":" + numbers({p.orientation.x, p.orientation.y, p.orientation.z,
                                                  p.orientation.w}) +
         ",\"base_twist\":" + numbers({t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                                       t.angular.z}) +
         ",\"contacts\":" + json_string(m.contacts) +
         ",\"dt\":" + number(m.dt) +
         ",\"state_labels\":" + strings(m.state_labels) +
         ",\"input_labels\":" + strings(m.input_labels) +
         ",\"state_matrix\":" + numbers(m.state_matrix) +
         ",\"input_matrix\":" + numbers(m.input_matrix) +
         ",\"inverse_mass_matrix\":" + numbers(m.inverse_mass_matrix) + "}";
}

}  // namespace

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  const auto arguments = rclcpp::remove_ros_arguments(argc, argv);
  if (arguments.size() < 2 || arguments.size() > 3) {
    std::fprintf(stderr, "usage: linearization_client <node, e.g. /robot_linearization> [timeout_s]\n");
    rclcpp::shutdown();
    return 2;
  }
  const std::string node_name = arguments[1];
  const auto timeout = std::chrono::duration<double>(arguments.size() == 3 ? std::stod(arguments[2]) : 60.0);
  auto node = rclcpp::Node::make_shared("linearization_client");

  Linearization::SharedPtr received;
  auto subscription = node->create_subscription<Linearization>(
    node_name + "/linearization", 10, [&received](Linearization::SharedPtr message) {
      if (!received) {
        received = message;
      }
    });
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (rclcpp::ok() && !received && std::chrono::steady_clock::now() < deadline) {
    rclcpp::spin_some(node);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!received) {
    std::fprintf(stderr, "linearization_client: no message on %s/linearization\n", node_name.c_str());
    rclcpp::shutdown();
    return 1;
  }

  // the request: the message's own linearization point
  auto request = std::make_shared<Linearize::Request>();
  request->joint_state.header = received->header;
  request->joint_state.name = received->joint_names;
  request->joint_state.position = received->joint_positions;
  request->joint_state.velocity = received->joint_velocities;
  request->joint_state.effort = received->joint_efforts;
  request->odometry.header = received->header;
  request->odometry.child_frame_id = received->header.frame_id;
  request->odometry.pose.pose = received->base_pose;
  request->odometry.twist.twist = received->base_twist;
  request->contacts = received->contacts;
  request->dt = received->dt;
  request->discretization = received->discretization;

  auto client = node->create_client<Linearize>(node_name + "/linearize");
  if (!client->wait_for_service(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout))) {
    std::fprintf(stderr, "linearization_client: no service %s/linearize\n", node_name.c_str());
    rclcpp::shutdown();
    return 1;
  }
  auto future = client->async_send_request(request);
  if (rclcpp::spin_until_future_complete(node, future, timeout) != rclcpp::FutureReturnCode::SUCCESS) {
    std::fprintf(stderr, "linearization_client: %s/linearize did not answer\n", node_name.c_str());
    rclcpp::shutdown();
    return 1;
  }
  const auto response = future.get();
  std::printf("{\"topic\":%s,\"service\":{\"success\":%s,\"message\":%s,\"linearization\":%s}}\n",
              linearization_json(*received).c_str(), response->success ? "true" : "false",
              json_string(response->message).c_str(), linearization_json(response->linearization).c_str());
  rclcpp::shutdown();
  return 0;
}
