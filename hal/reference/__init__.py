from hal.reference.device import ReferenceDevice, ReferencePreparedModel

__all__ = ["ReferenceDevice", "ReferencePreparedModel"]
