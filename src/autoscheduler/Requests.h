#ifndef ALCOP_AUTOSCHEDULER_REQUESTS_H
#define ALCOP_AUTOSCHEDULER_REQUESTS_H

/** \file
 * How the requests of alcop/Autoscheduler.h are recorded on a pipeline's output Func: one
 * trace tag each, "<tag><value>", read back by alcop::recorded (directive/Requests.h), the last
 * one winning. The requests write them (Requests.cpp,
 * in the library generators link); the plugin reads them back (AlcopAutoscheduler.cpp).
 */

#include <string>

namespace alcop {
namespace autoscheduler {

inline const std::string candidate_tag = "alcop.autoscheduler.candidate ";
inline const std::string gpu_tag = "alcop.autoscheduler.gpu ";
inline const std::string limits_tag = "alcop.autoscheduler.limits ";

}  // namespace autoscheduler
}  // namespace alcop

#endif
