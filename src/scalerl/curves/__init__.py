"""scalerl.curves"""
