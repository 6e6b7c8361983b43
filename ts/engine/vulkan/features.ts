/**
 * Which of the device's fast paths the engine takes, from its reported features alone (pure, so the
 * choice is tested with the values a BC-250 reports, and q36 --doctor prints the same verdicts).
 */
import type { VkDevice } from '../../vk/addon.js';

type DeviceInfo = ReturnType<VkDevice['info']>;

export type MvqChoice = 'all' | 'experts' | 'none';

/**
 * The decode products over int8 activation levels (mvq.comp): asked (true / 'experts' / false) where
 * the device has the packed dot at all; unasked, only where the packed 4×8-bit signed dot is
 * accelerated. Vulkan 1.3 makes shaderIntegerDotProduct mandatory, so an emulating driver (RADV on
 * GFX10, lavapipe) reports the feature too: there the f32 matvecs are faster.
 */
export function mvqChoice(info: Pick<DeviceInfo, 'integerDot' | 'integerDotAccelerated'>, asked: boolean | 'experts' | undefined): MvqChoice {
  if (!info.integerDot || asked === false) return 'none';
  if (asked === undefined) return info.integerDotAccelerated ? 'all' : 'none';
  return asked === 'experts' ? 'experts' : 'all';
}
