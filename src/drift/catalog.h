#pragma once

#include "base/check_catalog.h"

namespace tocsin::drift {

// The checks of `tocsin diff` (src/drift): staging against production.
inline constexpr char kClassMixed[] = "drift.class.mixed";
inline constexpr char kClassMissing[] = "drift.class.missing";
inline constexpr char kInputEmpty[] = "drift.input.empty";
inline constexpr char kInputUnreadable[] = "drift.input.unreadable";
inline constexpr char kRdmaResource[] = "drift.rdma.resource";
inline constexpr char kPluginMissing[] = "drift.plugin.missing";
inline constexpr char kPluginImage[] = "drift.plugin.image";
inline constexpr char kPluginConfig[] = "drift.plugin.config";
inline constexpr char kNetworkAttachment[] = "drift.network.attachment";
inline constexpr char kSriovPolicy[] = "drift.network.sriov-policy";
inline constexpr char kTemplateNccl[] = "drift.template.nccl";
inline constexpr char kTemplateEnv[] = "drift.template.env";
inline constexpr char kTemplateResources[] = "drift.template.resources";
inline constexpr char kTemplateMissing[] = "drift.template.missing";
inline constexpr char kNodeDriver[] = "drift.node.driver";
inline constexpr char kNodeFirmware[] = "drift.node.firmware";
inline constexpr char kNodeFabric[] = "drift.node.fabric";
inline constexpr char kNodeSoftware[] = "drift.node.software";

const CheckCatalog& Catalog();

}  // namespace tocsin::drift
