"""scalerl.tasks"""
