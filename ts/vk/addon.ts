/** Loads the native Vulkan addon and gives it types. Argument checking happens here, not in C++. */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { ADDON_PATH } from '../paths.js';

export interface VkDeviceInfo {
  index: number;
  name: string;
  type: 'discrete' | 'integrated' | 'cpu' | 'virtual' | 'other';
  driver: string;
  apiVersion: string;
  vendorId: number;
  subgroupSize: number;
  maxStorageBufferRange: number;
  maxWorkGroupInvocations: number;
  unifiedMemory: boolean;
  externalMemoryHost: boolean;
  storage8bit: boolean;
  storage16bit: boolean;
  float16: boolean;
  int8: boolean;
  heaps: { size: number; deviceLocal: boolean }[];
}

export interface VkAddon {
  listDevices(): VkDeviceInfo[];
  shaderNames(): string[];
  selfTest(deviceIndex: number, n: number): Promise<{ device: string; maxError: number; n: number }>;
}

let addon: VkAddon | undefined;

export function loadAddon(): VkAddon {
  if (!addon) {
    if (!fs.existsSync(ADDON_PATH)) throw new Error(`${ADDON_PATH} is missing: run "npm run build" first`);
    addon = createRequire(import.meta.url)(ADDON_PATH) as VkAddon;
  }
  return addon;
}
