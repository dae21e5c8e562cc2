// mbs_dynamics_mujoco: a ros2_control SystemInterface whose joints are simulated by MuJoCo.
//
// The MJCF comes from mbs_dynamics.sim.mujoco_model (a plain URDF turned into MuJoCo's model:
// the URDF's inertias, no geometry, no damping/friction/armature/limits; for a series-elastic
// joint `j` a rotor joint `j__motor` (inertia B, damping D_m) and a fixed tendon `j__spring` =
// θ − q with stiffness K). Interfaces per joint of the <ros2_control> block:
//   rigid joint:   command effort [Nm];  state position, velocity, effort (applied torque)
//   elastic joint: command position (θ_d, motor side) and effort (τ_m, motor torque
//                  feedforward); the drive's motor loop τ = τ_m + p (θ_ref − θ) + d (θ'_ref − θ')
//                  runs at every physics step, θ_ref interpolated linearly from the previous to
//                  the new position command over the period (the command is the set-point for
//                  the end of the period, as joint_trajectory_controller writes it), θ'_ref their
//                  difference quotient; a NaN position command switches the loop off (pure motor
//                  torque). State position, velocity (link side), effort (spring torque K(θ − q)).
//   Motor side of elastic joints: state interfaces motor_position (θ) and motor_velocity (θ'),
//   and (θ, θ', motor torque) as sensor_msgs/JointState on `<hardware node>/<motor_state_topic>`
//   (published in read(), stamped with the cycle's time: the state the controllers read).
// Non-finite commands never reach MuJoCo (a NaN effort counts as 0 and is reported). The joints
// are held ("brakes") until the first finite command. With publish_clock the plugin owns the
// simulated time: each write() advances MuJoCo by exactly one controller period and publishes
// /clock, so a controller manager with use_sim_time runs in lockstep at its update rate in sim
// time; real_time_factor paces it against the wall clock (0: as fast as possible).
#ifndef MBS_DYNAMICS_MUJOCO__MUJOCO_SYSTEM_HPP_
#define MBS_DYNAMICS_MUJOCO__MUJOCO_SYSTEM_HPP_

#include <mujoco/mujoco.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hardware_interface/system_interface.hpp"
#include "rclcpp/rclcpp.hpp"
#include "rosgraph_msgs/msg/clock.hpp"
#include "sensor_msgs/msg/joint_state.hpp"
#include "std_msgs/msg/float64_multi_array.hpp"

namespace mbs_dynamics_mujoco
{

struct SimJoint
{
  std::string name;
  bool elastic = false;
  int qpos = -1, dof = -1;            // link joint
  int motor_qpos = -1, motor_dof = -1;  // rotor joint (elastic)
  double stiffness = 0.0, motor_p = 0.0, motor_d = 0.0;
  double initial = 0.0;
  // interfaces
  double position = 0.0, velocity = 0.0, effort = 0.0;
  double motor_position = 0.0, motor_velocity = 0.0;  // θ, θ' (elastic joints)
  double cmd_effort = std::numeric_limits<double>::quiet_NaN();
  double cmd_position = std::numeric_limits<double>::quiet_NaN();
  // motor loop
  double prev_position_cmd = std::numeric_limits<double>::quiet_NaN();
  double motor_torque = 0.0;
};

class MujocoSystem : public hardware_interface::SystemInterface
{
public:
  MujocoSystem() = default;
  ~MujocoSystem() override;

  hardware_interface::CallbackReturn on_init(
    const hardware_interface::HardwareComponentInterfaceParams & params) override;
  hardware_interface::CallbackReturn on_activate(
    const rclcpp_lifecycle::State & previous_state) override;
  std::vector<hardware_interface::StateInterface> export_state_interfaces() override;
  std::vector<hardware_interface::CommandInterface> export_command_interfaces() override;
  hardware_interface::return_type read(
    const rclcpp::Time & time, const rclcpp::Duration & period) override;
  hardware_interface::return_type write(
    const rclcpp::Time & time, const rclcpp::Duration & period) override;

private:
  void clock_thread();
  void publish_clock(int64_t ns);
  bool step(double period);
  void copy_state();
  void report(const std::string & what);

  mjModel * model_ = nullptr;
  mjData * data_ = nullptr;
  std::vector<SimJoint> joints_;
  double dt_ = 0.001;            // controller period [s]
  int substeps_ = 1;
  double real_time_factor_ = 1.0;
  bool publish_clock_ = true;
  bool released_ = false;        // brakes released (a finite command arrived)
  int64_t sim_ns_ = 0;           // simulated time [ns]
  int64_t steps_ = 0;
  int badqacc_seen_ = 0;

  // pacing
  std::chrono::steady_clock::time_point wall_start_;
  int64_t pace_start_ns_ = 0;
  bool paced_ = false;
  int64_t late_cycles_ = 0;

  // clock before the control loop runs, and as a watchdog against a lost /clock message
  std::mutex clock_mutex_;
  std::atomic<bool> loop_started_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> last_write_wall_ns_{0};
  std::thread clock_thread_;

  rclcpp::Publisher<rosgraph_msgs::msg::Clock>::SharedPtr clock_pub_;
  rclcpp::Publisher<sensor_msgs::msg::JointState>::SharedPtr motor_pub_;
  // lock-step with a controller in another process (hardware parameter lockstep_topic): write()
  // of cycle k waits until a message has arrived on that topic since read() of cycle k published
  // the state (the command computed from it), at most lockstep_timeout wall seconds; write() of
  // cycle k + 1 applies that message's efforts (one per joint, in the hardware's joint order)
  // when the controller's command interface does not hold them yet (its own subscription lost
  // the race with the control loop)
  rclcpp::Subscription<std_msgs::msg::Float64MultiArray>::SharedPtr lockstep_sub_;
  std::vector<double> lockstep_data_;      // the latest message's data (lockstep_mutex_)
  std::vector<double> lockstep_pending_;   // the message awaited last cycle: applied this one
  int64_t lockstep_overrides_ = 0;
  std::mutex lockstep_mutex_;
  std::condition_variable lockstep_cv_;
  int64_t lockstep_count_ = 0;   // messages received (guarded by lockstep_mutex_)
  int64_t lockstep_mark_ = 0;    // the count when this cycle's state went out
  double lockstep_timeout_ = 1.0;
  int64_t lockstep_timeouts_ = 0;
  sensor_msgs::msg::JointState motor_msg_;
  rclcpp::Logger logger_ = rclcpp::get_logger("MujocoSystem");
  rclcpp::Clock steady_clock_{RCL_STEADY_TIME};
  int64_t bad_commands_ = 0;
};

}  // namespace mbs_dynamics_mujoco

#endif  // MBS_DYNAMICS_MUJOCO__MUJOCO_SYSTEM_HPP_
