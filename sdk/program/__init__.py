"""Reading a .pte program without the export stack: its tables (pte), its Vela payloads
(vela_stream), the boundary audit, inspection, cutting it at delegates, BundledPrograms and the
saved TOSA of each delegate."""
