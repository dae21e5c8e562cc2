// See include/mbs_dynamics_mujoco/mujoco_system.hpp.
#include "mbs_dynamics_mujoco/mujoco_system.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <string>
#include <vector>

#include "hardware_interface/types/hardware_interface_type_values.hpp"
#include "pluginlib/class_list_macros.hpp"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace mbs_dynamics_mujoco
{
using hardware_interface::CallbackReturn;
using hardware_interface::return_type;

namespace
{
double parse_double(const std::string & text, const std::string & what)
{
  size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception &) {
    throw std::invalid_argument(what + ": '" + text + "' is not a number");
  }
  if (used != text.size() || !std::isfinite(v)) {
    throw std::invalid_argument(what + ": '" + text + "' is not a finite number");
  }
  return v;
}

std::string param(
  const std::unordered_map<std::string, std::string> & map, const std::string & key,
  const std::string & fallback)
{
  auto it = map.find(key);
  return it == map.end() ? fallback : it->second;
}

int64_t wall_ns()
{
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
    std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

MujocoSystem::~MujocoSystem()
{
  stop_ = true;
  if (clock_thread_.joinable()) {
    clock_thread_.join();
  }
  if (data_) {
    mj_deleteData(data_);
  }
  if (model_) {
    mj_deleteModel(model_);
  }
}

CallbackReturn MujocoSystem::on_init(
  const hardware_interface::HardwareComponentInterfaceParams & params)
{
  if (hardware_interface::SystemInterface::on_init(params) != CallbackReturn::SUCCESS) {
    return CallbackReturn::ERROR;
  }
  logger_ = get_logger();
  const auto & hw = info_.hardware_parameters;
  try {
    const std::string mjcf = param(hw, "mjcf", "");
    if (mjcf.empty()) {
      throw std::invalid_argument("hardware parameter 'mjcf' (MJCF file) is missing");
    }
    char error[1000] = "";
    const bool binary = mjcf.size() > 4 && mjcf.compare(mjcf.size() - 4, 4, ".mjb") == 0;
    model_ = binary ? mj_loadModel(mjcf.c_str(), nullptr) :
      mj_loadXML(mjcf.c_str(), nullptr, error, sizeof(error));
    if (!model_) {
      throw std::invalid_argument("MuJoCo cannot load '" + mjcf + "': " + error);
    }
    data_ = mj_makeData(model_);
    const double rate = info_.rw_rate > 0 ? static_cast<double>(info_.rw_rate) : 1000.0;
    dt_ = 1.0 / rate;
    const std::string sub = param(hw, "substeps", "");
    substeps_ = sub.empty() ? static_cast<int>(std::lround(dt_ / model_->opt.timestep)) :
      static_cast<int>(parse_double(sub, "substeps"));
    if (substeps_ < 1 || substeps_ > 1000) {
      throw std::invalid_argument("substeps must be 1..1000, got " + std::to_string(substeps_));
    }
    model_->opt.timestep = dt_ / substeps_;
    real_time_factor_ = parse_double(param(hw, "real_time_factor", "1.0"), "real_time_factor");
    if (real_time_factor_ < 0.0) {
      throw std::invalid_argument("real_time_factor must be >= 0 (0: as fast as possible)");
    }
    lockstep_timeout_ = parse_double(param(hw, "lockstep_timeout", "1.0"), "lockstep_timeout");
    if (lockstep_timeout_ <= 0.0) {
      throw std::invalid_argument("lockstep_timeout must be > 0 s");
    }
    const std::string pc = param(hw, "publish_clock", "true");
    publish_clock_ = (pc == "true" || pc == "True" || pc == "1");

    for (const auto & ji : info_.joints) {
      SimJoint j;
      j.name = ji.name;
      const int id = mj_name2id(model_, mjOBJ_JOINT, ji.name.c_str());
      if (id < 0) {
        throw std::invalid_argument("joint '" + ji.name + "' is not in the MuJoCo model");
      }
      if (model_->jnt_type[id] != mjJNT_HINGE && model_->jnt_type[id] != mjJNT_SLIDE) {
        throw std::invalid_argument("joint '" + ji.name + "' is not a hinge or slide joint");
      }
      j.qpos = model_->jnt_qposadr[id];
      j.dof = model_->jnt_dofadr[id];
      bool has_pos_cmd = false, has_eff_cmd = false;
      for (const auto & c : ji.command_interfaces) {
        if (c.name == hardware_interface::HW_IF_POSITION) {
          has_pos_cmd = true;
        } else if (c.name == hardware_interface::HW_IF_EFFORT) {
          has_eff_cmd = true;
        } else {
          throw std::invalid_argument(
            "joint '" + ji.name + "': command interface '" + c.name +
            "' is not offered (effort; position + effort for elastic joints)");
        }
      }
      if (!has_eff_cmd) {
        throw std::invalid_argument("joint '" + ji.name + "' needs an effort command interface");
      }
      for (const auto & s : ji.state_interfaces) {
        if (s.name == hardware_interface::HW_IF_POSITION && !s.initial_value.empty()) {
          j.initial = parse_double(s.initial_value, ji.name + " initial_value");
        }
      }
      const int mid = mj_name2id(model_, mjOBJ_JOINT, (ji.name + "__motor").c_str());
      j.elastic = has_pos_cmd;
      if (j.elastic) {
        if (mid < 0) {
          throw std::invalid_argument(
            "joint '" + ji.name + "' has a position command (elastic) but the MuJoCo model has "
            "no rotor joint '" + ji.name + "__motor'");
        }
        j.motor_qpos = model_->jnt_qposadr[mid];
        j.motor_dof = model_->jnt_dofadr[mid];
        j.stiffness = parse_double(param(ji.parameters, "stiffness", ""), ji.name + " stiffness");
        j.motor_p = parse_double(param(ji.parameters, "motor_p", "0"), ji.name + " motor_p");
        j.motor_d = parse_double(param(ji.parameters, "motor_d", "0"), ji.name + " motor_d");
      } else if (mid >= 0) {
        throw std::invalid_argument(
          "joint '" + ji.name + "' is elastic in the MuJoCo model: give it a position command "
          "interface");
      }
      joints_.push_back(j);
    }
  } catch (const std::exception & e) {
    RCLCPP_FATAL(logger_, "%s", e.what());
    return CallbackReturn::ERROR;
  }

  for (auto & j : joints_) {
    data_->qpos[j.qpos] = j.initial;
    if (j.elastic) {
      data_->qpos[j.motor_qpos] = j.initial;
    }
  }
  mj_forward(model_, data_);
  copy_state();

  auto node = get_node();
  if (node) {
    if (publish_clock_) {
      clock_pub_ = node->create_publisher<rosgraph_msgs::msg::Clock>(
        "/clock", rclcpp::QoS(rclcpp::KeepLast(1)).reliable());
    }
    bool any_elastic = false;
    for (const auto & j : joints_) {
      any_elastic = any_elastic || j.elastic;
    }
    if (any_elastic) {
      motor_pub_ = node->create_publisher<sensor_msgs::msg::JointState>(
        param(hw, "motor_state_topic", "motor_states"), rclcpp::SystemDefaultsQoS());
      for (const auto & j : joints_) {
        if (j.elastic) {
          motor_msg_.name.push_back(j.name);
        }
      }
      motor_msg_.position.resize(motor_msg_.name.size());
      motor_msg_.velocity.resize(motor_msg_.name.size());
      motor_msg_.effort.resize(motor_msg_.name.size());
    }
    const std::string lockstep = param(hw, "lockstep_topic", "");
    if (!lockstep.empty()) {
      lockstep_sub_ = node->create_subscription<std_msgs::msg::Float64MultiArray>(
        lockstep, rclcpp::SystemDefaultsQoS(),
        [this](const std_msgs::msg::Float64MultiArray & msg) {
          {
            std::lock_guard<std::mutex> lock(lockstep_mutex_);
            ++lockstep_count_;
            lockstep_data_ = msg.data;
          }
          lockstep_cv_.notify_all();
        });
      RCLCPP_INFO(
        logger_, "lock-step: each cycle's step waits for a command on %s (at most %g s)",
        lockstep_sub_->get_topic_name(), lockstep_timeout_);
    }
  } else if (publish_clock_) {
    RCLCPP_FATAL(logger_, "publish_clock needs the hardware component's node (none given)");
    return CallbackReturn::ERROR;
  }
  sim_ns_ = 0;
  if (publish_clock_) {
    clock_thread_ = std::thread([this]() {clock_thread();});
  }
  RCLCPP_INFO(
    logger_, "MuJoCo %s: %zu joints (%d dofs), period %g s = %d steps of %g s (RK4=%d), "
    "real_time_factor %g, %s", mj_versionString(), joints_.size(), static_cast<int>(model_->nv), dt_, substeps_,
    model_->opt.timestep, model_->opt.integrator == mjINT_RK4, real_time_factor_,
    publish_clock_ ? "publishing /clock" : "on the controller manager's clock");
  return CallbackReturn::SUCCESS;
}

void MujocoSystem::publish_clock(int64_t ns)
{
  rosgraph_msgs::msg::Clock msg;
  msg.clock.sec = static_cast<int32_t>(ns / 1000000000);
  msg.clock.nanosec = static_cast<uint32_t>(ns % 1000000000);
  clock_pub_->publish(msg);
}

void MujocoSystem::clock_thread()
{
  // Before the control loop runs, sim time advances in real time (the joints are held); then
  // write() owns it, and this thread only re-sends the latest time if the loop seems stalled
  // (a lost /clock message would otherwise leave the controller manager asleep for ever).
  const int64_t dt_ns = static_cast<int64_t>(std::llround(dt_ * 1e9));
  while (!stop_ && rclcpp::ok()) {
    {
      std::lock_guard<std::mutex> lock(clock_mutex_);
      if (!loop_started_) {
        sim_ns_ += dt_ns;
        publish_clock(sim_ns_);
      } else if (wall_ns() - last_write_wall_ns_.load() > 50'000'000) {
        // 1 ns on: rclcpp's sleep_until wakes on a time jump of at least 1 ns, not on a repeat.
        // The nanosecond is kept (sim_ns_ is what was last published): the controller manager
        // may take it as the start of its next cycle and then sleeps until it + one period,
        // which the next write() must reach, or every later cycle would wait for this watchdog.
        sim_ns_ += 1;
        publish_clock(sim_ns_);
        last_write_wall_ns_ = wall_ns();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(loop_started_ ? 20 : 1));
  }
}

CallbackReturn MujocoSystem::on_activate(const rclcpp_lifecycle::State &)
{
  for (auto & j : joints_) {
    j.cmd_effort = std::numeric_limits<double>::quiet_NaN();
    j.cmd_position = std::numeric_limits<double>::quiet_NaN();
    j.prev_position_cmd = std::numeric_limits<double>::quiet_NaN();
  }
  return CallbackReturn::SUCCESS;
}

std::vector<hardware_interface::StateInterface> MujocoSystem::export_state_interfaces()
{
  std::vector<hardware_interface::StateInterface> out;
  for (auto & j : joints_) {
    out.emplace_back(j.name, hardware_interface::HW_IF_POSITION, &j.position);
    out.emplace_back(j.name, hardware_interface::HW_IF_VELOCITY, &j.velocity);
    out.emplace_back(j.name, hardware_interface::HW_IF_EFFORT, &j.effort);
    if (j.elastic) {
      out.emplace_back(j.name, "motor_position", &j.motor_position);
      out.emplace_back(j.name, "motor_velocity", &j.motor_velocity);
    }
  }
  return out;
}

std::vector<hardware_interface::CommandInterface> MujocoSystem::export_command_interfaces()
{
  std::vector<hardware_interface::CommandInterface> out;
  for (auto & j : joints_) {
    if (j.elastic) {
      out.emplace_back(j.name, hardware_interface::HW_IF_POSITION, &j.cmd_position);
    }
    out.emplace_back(j.name, hardware_interface::HW_IF_EFFORT, &j.cmd_effort);
  }
  return out;
}

void MujocoSystem::copy_state()
{
  for (auto & j : joints_) {
    j.position = data_->qpos[j.qpos];
    j.velocity = data_->qvel[j.dof];
    if (j.elastic) {
      j.effort = j.stiffness * (data_->qpos[j.motor_qpos] - data_->qpos[j.qpos]);
      j.motor_position = data_->qpos[j.motor_qpos];
      j.motor_velocity = data_->qvel[j.motor_dof];
    } else {
      j.effort = data_->qfrc_applied[j.dof];
    }
  }
}

return_type MujocoSystem::read(const rclcpp::Time & time, const rclcpp::Duration &)
{
  if (!loop_started_) {
    std::lock_guard<std::mutex> lock(clock_mutex_);
    loop_started_ = true;
  }
  copy_state();
  if (lockstep_sub_) {
    std::lock_guard<std::mutex> lock(lockstep_mutex_);
    lockstep_mark_ = lockstep_count_;
  }
  if (motor_pub_) {
    // the state this cycle's controllers read, stamped with its time (as joint_state_broadcaster
    // stamps /joint_states), published before they run: a consumer pairing the two by stamp
    // (feedforward_node's flatness output) finds the motor state of a joint state already there
    motor_msg_.header.stamp = time;
    size_t k = 0;
    for (const auto & j : joints_) {
      if (j.elastic) {
        motor_msg_.position[k] = j.motor_position;
        motor_msg_.velocity[k] = j.motor_velocity;
        motor_msg_.effort[k] = j.motor_torque;
        ++k;
      }
    }
    motor_pub_->publish(motor_msg_);
  }
  return return_type::OK;
}

void MujocoSystem::report(const std::string & what)
{
  ++bad_commands_;
  RCLCPP_ERROR_THROTTLE(
    logger_, steady_clock_, 1000, "%s (ignored; %ld non-finite commands so far)", what.c_str(),
    static_cast<long>(bad_commands_));
}

bool MujocoSystem::step(double period)
{
  const int n = std::max(1, static_cast<int>(std::lround(period / model_->opt.timestep)));
  const double h = model_->opt.timestep;
  for (int s = 0; s < n; ++s) {
    const double frac = static_cast<double>(s) / n;   // position in the period at this step
    for (auto & j : joints_) {
      double tau = std::isfinite(j.cmd_effort) ? j.cmd_effort : 0.0;
      if (j.elastic) {
        if (std::isfinite(j.cmd_position)) {
          const double prev = std::isfinite(j.prev_position_cmd) ? j.prev_position_cmd :
            j.cmd_position;
          const double ref = prev + (j.cmd_position - prev) * frac;
          const double ref_vel = (j.cmd_position - prev) / (n * h);
          tau += j.motor_p * (ref - data_->qpos[j.motor_qpos]) +
            j.motor_d * (ref_vel - data_->qvel[j.motor_dof]);
        }
        data_->qfrc_applied[j.motor_dof] = tau;
        j.motor_torque = tau;
      } else {
        data_->qfrc_applied[j.dof] = tau;
      }
    }
    mj_step(model_, data_);
    if (data_->warning[mjWARN_BADQACC].number > badqacc_seen_) {
      badqacc_seen_ = data_->warning[mjWARN_BADQACC].number;
      return false;
    }
  }
  for (int i = 0; i < model_->nq; ++i) {
    if (!std::isfinite(data_->qpos[i])) {
      return false;
    }
  }
  for (auto & j : joints_) {
    if (j.elastic) {
      j.prev_position_cmd = std::isfinite(j.cmd_position) ? j.cmd_position :
        std::numeric_limits<double>::quiet_NaN();
    }
  }
  return true;
}

return_type MujocoSystem::write(const rclcpp::Time &, const rclcpp::Duration & period)
{
  for (auto & j : joints_) {
    if (!std::isfinite(j.cmd_effort) && !std::isnan(j.cmd_effort)) {
      report("joint '" + j.name + "': effort command is infinite");
      j.cmd_effort = std::numeric_limits<double>::quiet_NaN();
    }
    if (j.elastic && std::isinf(j.cmd_position)) {
      report("joint '" + j.name + "': position command is infinite");
      j.cmd_position = std::numeric_limits<double>::quiet_NaN();
    }
    if (!released_ && (std::isfinite(j.cmd_effort) || std::isfinite(j.cmd_position))) {
      released_ = true;
      RCLCPP_INFO(logger_, "first command received: the joints move from now on");
    }
  }
  const double dt = publish_clock_ ? dt_ :
    std::min(std::max(period.seconds(), 0.0), 10.0 * dt_);
  if (lockstep_sub_ && lockstep_pending_.size() == joints_.size()) {
    // last cycle's awaited command: the controller's subscription may not have stored it yet
    // when this cycle's update() ran (a starved executor thread); the step applies it anyway
    bool differs = false;
    for (size_t i = 0; i < joints_.size(); ++i) {
      if (std::isfinite(lockstep_pending_[i]) && lockstep_pending_[i] != joints_[i].cmd_effort) {
        joints_[i].cmd_effort = lockstep_pending_[i];
        differs = true;
      }
    }
    lockstep_overrides_ += differs;
  }
  lockstep_pending_.clear();
  if (lockstep_sub_ && released_) {
    // the command computed from the state read() published this cycle (by a node in another
    // process) is awaited before time moves on: the next cycle's controllers then apply it, a
    // delay of exactly one period whatever the load (sim time stands still meanwhile)
    std::unique_lock<std::mutex> lock(lockstep_mutex_);
    const bool arrived = lockstep_cv_.wait_for(
      lock, std::chrono::duration<double>(lockstep_timeout_),
      [this]() {return lockstep_count_ > lockstep_mark_ || stop_;});
    if (arrived) {
      lockstep_pending_ = lockstep_data_;
    } else {
      ++lockstep_timeouts_;
      RCLCPP_WARN_THROTTLE(
        logger_, steady_clock_, 5000, "lock-step: no command within %g s (%ld times so far); "
        "stepping on", lockstep_timeout_, static_cast<long>(lockstep_timeouts_));
    }
  }
  if (released_) {
    if (!step(dt)) {
      RCLCPP_FATAL(
        logger_, "MuJoCo's simulation diverged (non-finite or bad accelerations) at t = %.4f s:"
        " the commands or gains are unstable for this model", data_->time);
      return return_type::ERROR;
    }
  } else {
    data_->time += dt;
  }
  copy_state();
  const int64_t dt_ns = static_cast<int64_t>(std::llround(dt * 1e9));
  int64_t now_ns;
  {
    std::lock_guard<std::mutex> lock(clock_mutex_);
    sim_ns_ += dt_ns;
    now_ns = sim_ns_;
    if (publish_clock_) {
      publish_clock(sim_ns_);
    }
  }
  last_write_wall_ns_ = wall_ns();
  ++steps_;
  if (publish_clock_ && real_time_factor_ > 0.0) {
    const auto now = std::chrono::steady_clock::now();
    if (!paced_) {
      wall_start_ = now;
      pace_start_ns_ = now_ns;
      paced_ = true;
    }
    const auto target = wall_start_ + std::chrono::nanoseconds(
      static_cast<int64_t>((now_ns - pace_start_ns_) / real_time_factor_));
    if (target > now) {
      std::this_thread::sleep_until(target);
    } else if (now - target > std::chrono::milliseconds(100)) {
      ++late_cycles_;   // far behind the wall clock: restart the pacing from here
      wall_start_ = now;
      pace_start_ns_ = now_ns;
    }
  }
  return return_type::OK;
}

}  // namespace mbs_dynamics_mujoco

PLUGINLIB_EXPORT_CLASS(mbs_dynamics_mujoco::MujocoSystem, hardware_interface::SystemInterface)
